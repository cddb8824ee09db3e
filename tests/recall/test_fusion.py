import numpy as np
import pytest

from engine.recall.fusion import RRF_C, fuse_scores, minmax, ranks, rrf, to_best, zscore


def test_minmax_weights_normalised_lists() -> None:
    dense = np.array([0.2, 0.4, 0.6])
    lexical = np.array([10.0, 0.0, 5.0])
    got = fuse_scores(dense, lexical, 0.7, "minmax")
    np.testing.assert_allclose(got, 0.3 * np.array([0, 0.5, 1]) + 0.7 * np.array([1, 0, 0.5]))


def test_near_tied_lexical_scores_stay_near_tied() -> None:
    # A name every turn carries: BM25 ~0.10-0.11 for all. Min-max would spread that over [0, 1] and let
    # the length normalisation pick the winner; as a share of the best it stays a near-tie, dense decides.
    dense, lexical = np.array([0.1, 0.3]), np.array([0.11, 0.10])
    np.testing.assert_allclose(to_best(lexical), [1.0, 10 / 11])
    got = fuse_scores(dense, lexical, 0.7, "minmax")
    assert got[1] > got[0]
    np.testing.assert_array_equal(to_best(np.zeros(2)), [0.0, 0.0])


def test_minmax_of_a_flat_list_is_all_ones() -> None:
    np.testing.assert_array_equal(minmax(np.array([3.0, 3.0])), [1.0, 1.0])


def test_rrf_is_weighted_reciprocal_ranks_scaled_to_best() -> None:
    dense = np.array([0.9, 0.1, 0.5])  # ranks 1, 3, 2
    lexical = np.array([0.0, 4.0, 2.0])  # ranks -, 1, 2 (a zero BM25 score is not in the lexical list)
    raw = np.array(
        [0.5 / (RRF_C + 1), 0.5 / (RRF_C + 3) + 0.5 / (RRF_C + 1), 0.5 / (RRF_C + 2) + 0.5 / (RRF_C + 2)]
    )
    np.testing.assert_allclose(rrf(dense, lexical, 0.5), raw / raw.max())
    np.testing.assert_array_equal(ranks(dense), [1, 3, 2])


def test_zscore_keeps_an_outlier_margin_that_minmax_loses() -> None:
    dense = np.array([0.50, 0.51, 0.52, 0.90])
    lexical = np.array([1.0, 1.1, 0.9, 1.0])
    z = fuse_scores(dense, lexical, 0.5, "zscore")
    assert z.argmax() == 3 and z.max() == 1.0 and z.min() == 0.0
    np.testing.assert_allclose(zscore(np.array([1.0, 3.0])), [-1.0, 1.0])


def test_dense_only_when_no_lexical_weight() -> None:
    dense = np.array([0.1, 0.3])
    np.testing.assert_allclose(fuse_scores(dense, np.array([5.0, 0.0]), 0.0, "rrf"), [0.0, 1.0])
    np.testing.assert_allclose(fuse_scores(dense, None, 0.7, "minmax"), [0.0, 1.0])


def test_unknown_fusion_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse_scores(np.ones(2), np.ones(2), 0.5, "max")
