"""The ANN tier against exact search, tier switch-over, masks inside FAISS, and the index file."""

import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import IndexConfig
from engine.errors import CorruptIndex
from engine.state import graph_add
from engine.state.vector_index import VectorIndex

DIM = 32
SMALL = IndexConfig(ann_min_notes=100, ann_exact_max=10)


def _clustered(seed: int, n: int, clusters: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, DIM))
    v = centres[rng.integers(0, clusters, n)] + 0.3 * rng.standard_normal((n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def _filled(vectors: np.ndarray, config: IndexConfig = SMALL) -> VectorIndex:
    ix = VectorIndex(DIM, config=config)
    ix.upsert([f"n{i}" for i in range(len(vectors))], vectors)
    return ix


def _recall(ix: VectorIndex, db: np.ndarray, queries: np.ndarray, allowed: np.ndarray) -> float:
    found = 0
    for q, hits in zip(queries, ix.search(queries[:, None, :][:, 0], 10, allowed), strict=True):
        scores = np.where(allowed, db @ q, -np.inf)
        tenth = np.sort(scores)[-10]
        found += sum(c >= tenth - 1e-5 for _, c in hits)
    return found / (10 * len(queries))


@settings(max_examples=15, deadline=None, derandomize=True)  # CI must not draw a new graph each run
@given(seed=st.integers(0, 10_000), n=st.integers(150, 600), clusters=st.integers(1, 12))
def test_ann_tier_recall_matches_exact(seed: int, n: int, clusters: int) -> None:
    db = _clustered(seed, n, clusters)
    queries = _clustered(seed + 1, 20, clusters)
    ix = _filled(db)
    assert ix.tier == "ann"
    everything = np.ones(n, dtype=bool)
    assert _recall(ix, db, queries, everything) >= 0.95
    half = np.random.default_rng(seed).random(n) < 0.5
    assert _recall(ix, db, queries, half) >= 0.95


def test_switch_over_keeps_slots_ids_and_results() -> None:
    db = _clustered(1, 160, 6)
    ix = VectorIndex(DIM, config=SMALL)
    slots = ix.upsert([f"n{i}" for i in range(99)], db[:99])
    before = ix.search(db[:5], 10)
    assert ix.tier == "exact"
    slots += ix.upsert([f"n{i}" for i in range(99, 160)], db[99:])
    assert ix.tier == "ann"
    assert slots == list(range(160))
    assert ix.ids == [f"n{i}" for i in range(160)]
    np.testing.assert_array_equal(ix.vector("n7"), db[7])
    after = ix.search(db[:5], 10, np.arange(160) < 99)  # the same candidate set as before
    assert [[s for s, _ in h] for h in after] == [[s for s, _ in h] for h in before]
    ix.remove([f"n{i}" for i in range(120)])  # below half the threshold: back to exact
    assert ix.tier == "exact"
    assert [s for s, _ in ix.search(db[150:151], 1)[0]] == [150]


@pytest.mark.parametrize("share", [0.5, 0.05])
def test_mask_gives_only_allowed_slots(share: float) -> None:
    db = _clustered(2, 400, 8)
    ix = _filled(db, IndexConfig(ann_min_notes=100, ann_exact_max=10))
    allowed = np.random.default_rng(3).random(400) < share
    for hits in ix.search(db[:20], 10, allowed):
        assert hits and all(allowed[s] for s, _ in hits)
    assert _recall(ix, db, db[:20], allowed) >= 0.95


def test_selective_mask_is_searched_exactly() -> None:
    db = _clustered(4, 300, 5)
    ix = _filled(db, IndexConfig(ann_min_notes=100, ann_exact_max=50))
    allowed = np.zeros(300, dtype=bool)
    allowed[::10] = True  # 30 allowed <= ann_exact_max
    for q, hits in zip(db[:10], ix.search(db[:10], 5, allowed), strict=True):
        expected = np.flatnonzero(allowed)[np.argsort(-(db[allowed] @ q))[:5]]
        assert [s for s, _ in hits] == list(expected)


def test_reembed_in_ann_tier_overwrites_in_place() -> None:
    db = _clustered(5, 300, 6)
    ix = _filled(db)
    fresh = _clustered(6, 300, 6)
    assert ix.upsert(["n3", "n4"], fresh[:2]) == [3, 4]  # far moves: rows in place, graph stale
    assert ix.num_slots == 300
    assert [s for s, _ in ix.search(fresh[:1], 1)[0]] == [3]
    np.testing.assert_array_equal(ix.vector("n4"), fresh[1])
    ix.upsert([f"n{i}" for i in range(300)], fresh)  # every row moved: the graph is rebuilt
    assert ix.tier == "ann" and not ix._stale
    assert _recall(ix, fresh, fresh[:20], np.ones(300, dtype=bool)) >= 0.95


def test_removed_slot_is_reused_and_hidden_in_ann_tier() -> None:
    db = _clustered(7, 200, 4)
    ix = _filled(db)
    ix.remove(["n10"])
    assert all(s != 10 for s, _ in ix.search(db[10:11], 20)[0])
    assert ix.upsert(["new"], db[10:11]) == [10]
    assert ix.search(db[10:11], 1)[0][0][0] == 10


@pytest.mark.parametrize("threshold", [1000, 100])
def test_save_load_round_trip(tmp_path: Path, threshold: int) -> None:
    db = _clustered(8, 250, 5)
    ix = _filled(db, IndexConfig(ann_min_notes=threshold))
    ix.remove(["n5"])
    ix.save(tmp_path / "index.faiss", position=42)
    back = VectorIndex.load(tmp_path / "index.faiss", 42, config=ix.config)
    assert back.tier == ix.tier and back.ids == ix.ids and back.slot_of == ix.slot_of
    assert back.upsert(["again"], db[5:6]) == [5]
    ix.upsert(["again"], db[5:6])
    assert back.search(db[:10], 10) == ix.search(db[:10], 10)


def test_load_rejects_damaged_or_stale_files(tmp_path: Path) -> None:
    path = tmp_path / "index.faiss"
    _filled(_clustered(9, 150, 3)).save(path, position=7)
    with pytest.raises(CorruptIndex, match="position 7, expected 8"):
        VectorIndex.load(path, 8)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndex, match="checksum"):
        VectorIndex.load(path, 7)
    path.write_bytes(bytes(data[: len(data) // 2]))
    with pytest.raises(CorruptIndex, match=str(path)):
        VectorIndex.load(path, 7)


def test_the_write_beam_overrides_the_search_beam() -> None:
    """`ef` reaches FAISS: a one-wide beam misses neighbours the default beam finds, a wide one finds more."""
    db = _clustered(3, 3000, 40)
    queries = _clustered(4, 50, 40)
    ix = _filled(db)
    everything = np.ones(len(db), dtype=bool)

    def recall(ef: int | None) -> float:
        exact = np.argsort(-(queries @ db.T), axis=1)[:, :10]
        got = ix.search(queries, 10, everything, ef)
        return float(
            np.mean([len({s for s, _ in g} & set(e.tolist())) / 10 for g, e in zip(got, exact, strict=True)])
        )

    assert recall(1) < recall(None) <= recall(512) and recall(512) >= 0.95


def test_the_search_beam_grows_with_the_tenant_past_its_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.state.ann as ann

    config = IndexConfig(ann_ef_search=256, ann_ef_grow_from=100_000)
    assert [config.search_beam(n) for n in (10_000, 100_000, 1_000_000)] == [256, 256, 512]
    with pytest.raises(Exception, match="ann_ef_grow_from"):
        IndexConfig(ann_ef_grow_from=0)
    beams: list[int] = []
    real = ann.search_ann
    monkeypatch.setattr(ann, "search_ann", lambda *a, **kw: beams.append(a[-1]) or real(*a, **kw))
    db = _clustered(3, 400, 8)
    for grow_from, beam in ((1_000, 64), (40, 128)):  # 400 notes: 10x past 40 doubles the beam
        ix = _filled(
            db, IndexConfig(ann_min_notes=100, ann_exact_max=10, ann_ef_search=64, ann_ef_grow_from=grow_from)
        )
        ix.search(db[:2], 5)
        assert beams[-1] == beam
        assert ix.search(db[:1], 5, ef=32) and beams[-1] == 32  # an explicit beam still wins


def test_rows_added_in_the_background_are_there_for_the_next_read() -> None:
    """In the ann tier new rows join the graph on a worker thread; every read waits for them."""
    db = _clustered(9, 400, 8)
    ix = _filled(db[:150])
    assert ix.tier == "ann"
    for start in range(150, 400, 50):
        ids = [f"n{i}" for i in range(start, start + 50)] + ["n3"]  # new rows and one re-embedded in place
        rows = np.concatenate([db[start : start + 50], db[start - 1 : start]])
        slots = ix.upsert(ids, rows)
        np.testing.assert_array_equal(ix.vectors(np.array(slots)), rows)
        top = ix.search(db[start : start + 50], 1, ef=64)
        assert [hits[0][0] for hits in top] == slots[:50]
        assert ix.num_slots == start + 50
    again = _filled(db, SMALL)
    for q, a, b in zip(db[::37], ix.search(db[::37], 5), again.search(db[::37], 5), strict=True):
        assert [s for s, _ in a][:1] == [s for s, _ in b][:1] == [int(np.argmax(db @ q))]


def test_a_failed_background_add_is_raised_on_every_later_read() -> None:
    db = _clustered(10, 200, 4)
    ix = _filled(db[:150])

    def no_memory(rows: np.ndarray) -> None:
        raise MemoryError("no room for the graph")

    ix._store.add = no_memory  # the insert a full machine would refuse
    ix.upsert(["late"], db[150:151])
    assert ix._adds.future is not None and ix._adds.future.exception(
        timeout=30
    )  # failed (a search before may answer)
    for read in (lambda: ix.search(db[:1], 3), lambda: ix.vector("n0"), lambda: ix.upsert(["x"], db[:1])):
        with pytest.raises(MemoryError, match="no room"):
            read()


def test_a_search_during_a_background_add_answers_without_waiting_and_sees_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The graph as far as the add got, the rest exactly: the same hits as after the add, mask honoured."""
    monkeypatch.setattr(graph_add, "ADD_CHUNK", 8)
    db = _clustered(3, 260, 5)
    ix = _filled(db[:200])
    real, reached, release = ix._adds._add_chunk, threading.Event(), threading.Event()

    def slow_add(store: object, rows: np.ndarray) -> None:
        real(store, rows)
        reached.set()  # one chunk in the graph: hold the rest (between chunks, the graph unlocked)
        assert release.wait(30)

    ix._adds._add_chunk = slow_add  # type: ignore[method-assign]
    ix.search(db[:1], 1)  # queries come: the add goes in chunks
    ix.upsert([f"n{i}" for i in range(200, 260)], db[200:])
    assert reached.wait(30) and ix._store.ntotal == 208
    queries, half = db[195:215], np.random.default_rng(0).random(260) < 0.5
    during = [ix.search(queries, 5), ix.search(queries, 5, half)]  # would wait for `release` forever
    some = np.array([0, 150, 207, 208, 259])  # rows in the graph, and not yet: read without waiting too
    assert np.array_equal(ix.vectors(some), db[some])
    assert ix._store.ntotal == 208 and ix._adds.running
    assert {s for hits in during[0] for s, _ in hits} & set(range(208, 260))  # pending rows are found
    assert all(half[s] for hits in during[1] for s, _ in hits)
    release.set()
    ix._settle()
    for got, allowed in zip(during, (np.ones(260, bool), half), strict=True):
        for q, hits in zip(queries, got, strict=True):
            fifth = np.sort(np.where(allowed, db @ q, -np.inf))[-5]
            assert len(hits) == 5 and all(c >= fifth - 1e-5 for _, c in hits)  # the exact top 5


def test_a_background_add_goes_whole_unless_queries_come(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_add, "ADD_CHUNK", 8)
    db = _clustered(4, 300, 5)
    ix = _filled(db[:200])
    sizes: list[int] = []
    real = ix._adds._add_chunk
    ix._adds._add_chunk = lambda store, rows: (sizes.append(len(rows)), real(store, rows))[1]  # type: ignore[method-assign]
    ix.search(db[:1], 1, background=True)  # a write's own search is no query
    ix.upsert([f"n{i}" for i in range(200, 250)], db[200:250])
    ix._settle()
    assert sizes == [50]
    ix.search(db[:1], 1)
    ix.upsert([f"n{i}" for i in range(250, 300)], db[250:300])
    ix._settle()
    assert sizes == [50, 8, 8, 8, 8, 8, 8, 2]


def _rows_at(store: object) -> int:
    """Address of an HNSW store's vector rows (FAISS moves them when its arrays grow)."""
    import faiss

    return int(faiss.downcast_index(store.storage).get_xb())  # type: ignore[attr-defined]


@pytest.mark.parametrize("room", [True, False], ids=["room made first", "no room made"])
def test_room_made_before_a_write_keeps_the_graph_in_place_while_rows_join(
    tmp_path: Path, room: bool
) -> None:
    """After a reopen the graph's arrays are exactly full, and the first insert moved them all under
    the insert's lock; `make_room` copies them with room to spare before the write takes the lock."""
    db = _clustered(12, 700, 6)
    _filled(db[:600]).save(tmp_path / "index.faiss", position=1)
    ix = VectorIndex.load(tmp_path / "index.faiss", 1, config=SMALL)
    if room:
        ix.make_room(100)
    start_at = _rows_at(ix._roomy if room else ix._store)
    for start in (600, 650):
        slots = ix.upsert([f"n{i}" for i in range(start, start + 50)], db[start : start + 50])
        ix.vector("n0")  # waits for the background insert
        assert slots == list(range(start, start + 50))
    assert (_rows_at(ix._store) == start_at) is room
    whole = _filled(db)
    assert ix.ids == whole.ids
    for a, b in zip(ix.search(db[::50], 3, ef=128), whole.search(db[::50], 3, ef=128), strict=True):
        assert [s for s, _ in a][:1] == [s for s, _ in b][:1]


def test_a_mask_searched_again_follows_the_writes_between() -> None:
    """The index keeps `live & mask` for the last read-only mask; a write in between must not be missed
    (exact tier: every allowed row comes back, a removed one would with score 0)."""
    db = _clustered(5, 400, 8)
    ix = _filled(db, IndexConfig())
    assert ix.tier == "exact"
    mask = np.ones(ix.num_slots, dtype=bool)
    mask[::3] = False
    mask.setflags(write=False)
    top = ix.search(db[1:2], 5, mask)[0][0][0]
    ix.remove([f"n{top}"])
    every = ix.search(db[1:2], ix.num_slots, mask)[0]
    assert top not in [s for s, _ in every] and len(every) == int((mask & ix.live).sum())
    (slot,) = ix.upsert(["fresh"], db[1:2])  # the freed slot, taken again
    assert slot == top and ix.search(db[1:2], 1, mask)[0][0][0] == slot
