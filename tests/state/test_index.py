import faiss
import numpy as np
import pytest

from engine.errors import NotFound
from engine.state import ann
from engine.state.vector_index import VectorIndex


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    v = rng.standard_normal((n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_search_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    db, q = _unit(rng, 500, 32), _unit(rng, 7, 32)
    ix = VectorIndex(32)
    ix.upsert([f"n{i}" for i in range(500)], db)
    for row, hits in zip(q, ix.search(q, 10), strict=True):
        expected = np.argsort(-(db @ row))[:10]
        assert [s for s, _ in hits] == list(expected)


def test_update_overwrites_row_in_place() -> None:
    rng = np.random.default_rng(1)
    v = _unit(rng, 3, 16)
    ix = VectorIndex(16)
    slots = ix.upsert(["a", "b"], v[:2])
    assert ix.upsert(["a"], v[2:3]) == [slots[0]]
    assert ix.num_slots == 2
    np.testing.assert_array_equal(ix.vector("a"), v[2])
    assert ix.search(v[2:3], 1)[0][0][0] == slots[0]


def test_remove_frees_slot_and_hides_it() -> None:
    rng = np.random.default_rng(2)
    v = _unit(rng, 3, 8)
    ix = VectorIndex(8)
    ix.upsert(["a", "b"], v[:2])
    ix.remove(["a"])
    assert [s for s, _ in ix.search(v[:1], 5)[0]] == [1]
    with pytest.raises(NotFound):
        ix.vector("a")
    assert ix.upsert(["c"], v[2:3]) == [0]  # the freed slot is reused
    assert len(ix) == 2


def test_mask_restricts_results() -> None:
    rng = np.random.default_rng(3)
    v = _unit(rng, 6, 8)
    ix = VectorIndex(8)
    ix.upsert([str(i) for i in range(6)], v)
    mask = np.array([False, True, False, True, False, False])
    assert {s for s, _ in ix.search(v[:1], 6, mask)[0]} == {1, 3}
    assert ix.search(v[:1], 3, np.zeros(6, dtype=bool)) == [[]]


def test_torch_mirror_path_matches_faiss_path() -> None:
    """The GPU search path (a torch mirror + kernels.masked_topk), run here on the CPU device."""
    rng = np.random.default_rng(4)
    v, q = _unit(rng, 300, 32), _unit(rng, 3, 32)
    plain, mirrored = VectorIndex(32), VectorIndex(32, torch_device="cpu")
    ids = [f"n{i}" for i in range(300)]
    for ix in (plain, mirrored):
        ix.upsert(ids, v)
        ix.upsert(["n7"], q[:1])  # an in-place update reaches the mirror too
        ix.remove(["n8"])
    mask = np.ones(300, dtype=bool)
    mask[::3] = False
    for m in (None, mask):
        want = [[s for s, _ in hits] for hits in plain.search(q, 5, m)]
        got = [[s for s, _ in hits] for hits in mirrored.search(q, 5, m)]
        assert got == want


def test_a_mirrored_index_stays_flat_on_the_host_and_grows_batch_by_batch() -> None:
    """With a GPU mirror every search runs there, exactly: past ann_min_notes the host copy builds no graph,
    and appends in many small batches (the mirror's buffer doubling) keep every row where search finds it."""
    from engine.config import IndexConfig

    rng = np.random.default_rng(5)
    v, q = _unit(rng, 500, 32), _unit(rng, 4, 32)
    config = IndexConfig(ann_min_notes=100)
    plain, mirrored = VectorIndex(32, config=config), VectorIndex(32, torch_device="cpu", config=config)
    ids = [f"n{i}" for i in range(500)]
    for start in range(0, 500, 7):
        for ix in (plain, mirrored):
            ix.upsert(ids[start : start + 7], v[start : start + 7])
    assert plain.tier == "ann" and mirrored.tier == "exact"
    assert mirrored._gpu is not None and mirrored._gpu._db.shape[0] == 500
    exact = VectorIndex(32, config=IndexConfig(ann_min_notes=1 << 30))
    exact.upsert(ids, v)
    assert [[s for s, _ in h] for h in mirrored.search(q, 10)] == [
        [s for s, _ in h] for h in exact.search(q, 10)
    ]


def test_a_single_query_runs_on_one_openmp_thread_and_restores_the_callers_setting() -> None:
    rng = np.random.default_rng(5)
    db = _unit(rng, 300, 16)
    ix = VectorIndex(16)
    ix.upsert([f"n{i}" for i in range(300)], db)
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(3)
    try:
        with ann.one_thread():
            assert faiss.omp_get_max_threads() == 1
        hits = ix.search(db[:1], 5)[0]
        assert hits[0][0] == 0 and faiss.omp_get_max_threads() == 3
        with pytest.raises(RuntimeError), ann.one_thread():
            raise RuntimeError("a failing search")
        assert faiss.omp_get_max_threads() == 3
    finally:
        faiss.omp_set_num_threads(before)


@pytest.mark.parametrize("min_notes", [10_000, 50])  # the exact tier; the graph tier with background adds
def test_kept_mean_follows_adds_overwrites_and_removes(min_notes: int) -> None:
    from engine.config import IndexConfig

    rng = np.random.default_rng(7)
    ix = VectorIndex(16, config=IndexConfig(ann_min_notes=min_notes))
    ix.upsert([f"n{i}" for i in range(40)], _unit(rng, 40, 16))
    ix.centroid()  # from here on the mean is kept, not summed again
    ix.upsert([f"n{i}" for i in range(30, 120)], _unit(rng, 90, 16))  # 10 overwritten, 80 new
    ix.remove([f"n{i}" for i in range(0, 120, 3)])
    ix.upsert(["m0", "m1"], _unit(rng, 2, 16))  # into freed slots
    ix.upsert(["p0", "p1", "p2"], _unit(rng, 3, 16))  # appended (into the graph in the background)
    live = np.array([ix.vector(i) for i in ix.slot_of])
    np.testing.assert_allclose(ix.centroid(), live.mean(axis=0), atol=1e-5)
    mask = np.zeros(ix.num_slots, dtype=bool)
    mask[[ix.slot_of["n1"], ix.slot_of["m0"]]] = True
    np.testing.assert_allclose(ix.mean_of(mask), (ix.vector("n1") + ix.vector("m0")) / 2, atol=1e-6)
    mask = ix.live.copy()  # all but two: the kept sum less those two rows
    mask[[ix.slot_of["n1"], ix.slot_of["m0"]]] = False
    others = np.array([ix.vector(i) for i in ix.slot_of if i not in ("n1", "m0")])
    np.testing.assert_allclose(ix.mean_of(mask), others.mean(axis=0), atol=1e-5)
    assert not ix.mean_of(np.zeros(ix.num_slots, dtype=bool)).any()
