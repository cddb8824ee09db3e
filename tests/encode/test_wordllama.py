"""The default encoder pools WordLlama's token embeddings itself (sorted, unpadded): the library's vectors."""

import numpy as np
import pytest

from engine.encode.wordllama import WordLlamaEncoder, _load_wordllama, mean_pool

TEXTS = [
    "I moved to Seattle last spring.",
    "ok",
    "Caroline on 03 May 2023 about hiking, board games, family. Related: Melanie on 04 May 2023 about "
    "pottery, painting, kids, and the long weekend at the lake with everyone from the support group.",
    "   ",
    "Zürich 🚲 42 km/h!!",
]


@pytest.fixture(scope="module")
def encoder() -> WordLlamaEncoder:
    return WordLlamaEncoder()


def test_same_vectors_as_the_library_in_input_order(encoder: WordLlamaEncoder) -> None:
    texts = TEXTS * 120  # more than one chunk, lengths mixed
    ours = encoder.encode_batch(texts)
    theirs = _load_wordllama(256).embed(texts, norm=True, batch_size=256)
    assert ours.shape == (len(texts), 256)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_a_text_without_tokens_is_a_zero_vector_not_nan(encoder: WordLlamaEncoder) -> None:
    out = encoder.encode_batch(["", "hello there"])
    assert not np.isnan(out).any()
    assert np.linalg.norm(out[0]) == 0 and np.linalg.norm(out[1]) == pytest.approx(1.0, abs=1e-5)


def test_mean_pool_is_the_mean_of_the_named_rows() -> None:
    table = np.arange(20, dtype=np.float32).reshape(10, 2)
    ids = [np.array([1, 3]), np.array([], dtype=np.int64), np.array([9]), np.array([2, 2, 2, 5])]
    expected = [table[[1, 3]].mean(0), [0, 0], table[9], table[[2, 2, 2, 5]].mean(0)]
    np.testing.assert_allclose(mean_pool(table, ids), np.array(expected))
