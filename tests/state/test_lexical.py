"""The tantivy lexical index: BM25 as the project's analyser scores it, validity filtered in the query."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from engine.state.lexical import LexicalIndex
from engine.text import terms

DOCS = [
    "Maya repaired a rusty bicycle in Lisbon",
    "Leo bought bicycles and a guitar in Kyoto",
    "the guitar lessons started in May",
    "Ana painted a quiet garden",
]


def brute_bm25(docs: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    counts = [Counter(terms(d)) for d in docs]
    avg = sum(sum(c.values()) for c in counts) / len(docs)
    out = np.zeros(len(docs))
    for term in set(terms(query)):
        df = sum(term in c for c in counts)
        if not df:
            continue
        idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
        for i, c in enumerate(counts):
            tf, n = c[term], sum(c.values())
            out[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * n / avg)) if tf else 0.0
    return out


def index_of(docs: list[str], invalid: dict[int, float] | None = None) -> LexicalIndex:
    ix = LexicalIndex()
    for slot, text in enumerate(docs):
        ix.upsert(slot, text, visible_from=10.0 * slot, invalid_at=(invalid or {}).get(slot, np.inf))
    return ix


@pytest.mark.parametrize("query", ["bicycle in Lisbon", "guitar", "Guitars, bicycles!", "quiet garden Maya"])
def test_scores_match_bm25_over_the_project_terms(query: str) -> None:
    ix = index_of(DOCS)
    want = brute_bm25(DOCS, query)
    slots, scores = ix.top(query, 10, any_time=True)
    assert set(slots.tolist()) == {i for i in range(len(DOCS)) if want[i] > 0}
    np.testing.assert_allclose(scores, want[slots], rtol=1e-4)
    np.testing.assert_allclose(ix.scores_of(query, np.arange(len(DOCS))), want, rtol=1e-4)


def test_validity_filters_inside_the_query() -> None:
    ix = index_of(DOCS, invalid={1: 25.0})  # doc 1 visible from 10, invalid from 25
    assert set(ix.top("guitar", 10)[0].tolist()) == {2}  # valid now: the superseded doc is out
    assert set(ix.top("guitar", 10, as_of=15.0)[0].tolist()) == {1}  # doc 2 not visible before t=20
    assert set(ix.top("guitar", 10, as_of=20.0)[0].tolist()) == {1, 2}
    assert set(ix.top("guitar", 10, as_of=25.0)[0].tolist()) == {2}  # invalid_at is exclusive
    assert set(ix.top("guitar", 10, any_time=True)[0].tolist()) == {1, 2}
    _, filtered = ix.top("guitar", 10)
    np.testing.assert_allclose(filtered, brute_bm25(DOCS, "guitar")[[2]], rtol=1e-4)  # filters add no score


def test_upsert_replaces_and_remove_forgets() -> None:
    ix = index_of(DOCS)
    ix.upsert(0, "a violin in Oslo", 0.0, np.inf)
    ix.remove(3)
    assert len(ix) == 3
    assert ix.top("rusty bicycle Lisbon", 10, any_time=True)[0].tolist() == []
    assert ix.top("violin", 10, any_time=True)[0].tolist() == [0]
    assert set(ix.top("guitar", 10, any_time=True)[0].tolist()) == {1, 2}
    assert ix.top("garden", 10, any_time=True)[0].tolist() == []


def test_query_syntax_in_user_text_is_just_words() -> None:
    ix = index_of(DOCS)
    slots, _ = ix.top('guitar AND NOT "( lessons:* OR [a TO z]', 10, any_time=True)
    assert set(slots.tolist()) == {1, 2}
    assert ix.top("", 10)[0].tolist() == [] and ix.top("the and of", 10)[0].tolist() == []


def test_on_disk_index_reopens_with_its_documents(tmp_path) -> None:
    ix = LexicalIndex(tmp_path / "lex")
    for slot, text in enumerate(DOCS):
        ix.upsert(slot, text, 0.0, np.inf)
    ix.flush()
    again = LexicalIndex(tmp_path / "lex")
    assert len(again) == len(DOCS)
    assert (
        again.top("bicycle", 10, any_time=True)[0].tolist()
        == ix.top("bicycle", 10, any_time=True)[0].tolist()
    )


def test_a_write_only_ingest_commits_once_the_buffer_is_full(monkeypatch) -> None:
    from engine.state import lexical as lexical_mod

    monkeypatch.setattr(lexical_mod, "_BUFFERED", 5)
    index = lexical_mod.LexicalIndex()
    for slot in range(12):
        index.upsert(slot, f"note {slot} about kites", 0.0, float("inf"))
    assert len(index._adds) < 5  # committed twice on the way, never holding all twelve
    assert len(index) == 12 and sorted(index.matches("kites")[0].tolist()) == list(range(12))


# --- common terms in a big index (lexical.PRUNE_FROM) ---------------------------------------------------
def _chat_corpus() -> list[str]:
    """200 turns: 'coffee' in half, 'morning' in a third, 'kayak' in 4, 'museum' in 6 (5% is 10 docs)."""
    docs = []
    for i in range(200):
        words = ["coffee"] * (i % 2 == 0) + ["morning"] * (i % 3 == 0) + ["weather"] * (i % 5 == 0)
        words += ["kayak"] * (i in (3, 40, 41, 150)) + ["museum"] * (i in (6, 12, 18, 60, 61, 62))
        docs.append(" ".join(["we", "talked", *words, f"topic{i}"]))
    return docs


@pytest.fixture
def pruning(monkeypatch):
    from engine.state import lexical as lexical_mod

    monkeypatch.setattr(lexical_mod, "PRUNE_FROM", 1)


def test_common_terms_score_only_documents_holding_a_rarer_one(pruning) -> None:
    docs = _chat_corpus()
    query = "coffee in the morning, kayak or museum?"
    slots, scores = index_of(docs).matches(query)
    want = brute_bm25(docs, query)
    assert set(slots.tolist()) == {3, 40, 41, 150, 6, 12, 18, 60, 61, 62}  # not the 130 coffee/morning turns
    np.testing.assert_allclose(scores, want[slots], rtol=1e-4)  # still the whole query's BM25


def test_all_common_terms_require_the_two_rarest_while_they_fill_the_limit(pruning) -> None:
    docs = _chat_corpus()
    query = "coffee morning weather"
    slots, scores = index_of(docs).matches(query, limit=5)
    want = brute_bm25(docs, query)
    assert len(slots) == 5 and all(s % 15 == 0 for s in slots.tolist())  # morning and weather: i % 15 == 0
    np.testing.assert_allclose(scores, want[slots], rtol=1e-4)
    # 14 turns hold both; past that the rarest alone is required: every 'weather' turn, no plain 'coffee' one
    slots, scores = index_of(docs).matches(query, limit=30)
    assert len(slots) == 30 and all(s % 5 == 0 for s in slots.tolist())
    assert {i for i in range(200) if i % 15 == 0} <= set(slots.tolist())  # they score highest
    np.testing.assert_allclose(scores, want[slots], rtol=1e-4)


def test_unknown_words_do_not_prune_and_a_small_index_is_exact() -> None:
    docs = _chat_corpus()
    slots, _ = index_of(docs).matches("coffee morning weather", limit=200)
    assert len(slots) == 200 - len([i for i in range(200) if i % 2 and i % 3 and i % 5])  # below PRUNE_FROM


def test_an_unknown_word_is_not_a_rare_one(pruning) -> None:
    docs = _chat_corpus()
    slots, _ = index_of(docs).matches("coffee xylophone")
    assert sorted(slots.tolist()) == list(range(0, 200, 2))


def test_a_working_copy_never_writes_through_to_its_source(tmp_path) -> None:
    """The copy hard-links the snapshot's files: commits, deletes and merges must leave them as written."""
    import hashlib

    source = tmp_path / "snap"
    ix = LexicalIndex(source)
    for slot, text in enumerate(DOCS * 5):
        ix.upsert(slot, text, 0.0, np.inf)
    ix.flush()
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.iterdir() if p.is_file()}
    work = LexicalIndex.working_copy(source)
    linked = [p for p in work.path.iterdir() if p.is_file() and p.stat().st_nlink > 1]  # type: ignore[union-attr]
    assert linked, "expected hard links on one file system"
    for round_ in range(12):  # enough commits for tantivy to merge segments
        for slot in range(round_, 20, 3):
            work.upsert(slot, f"round {round_} kayak trip", 0.0, np.inf)
        work.remove(19 - round_)
        work.flush()
    work._index.writer(15_000_000, 1).garbage_collect_files()
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in source.iterdir() if p.is_file()}
    assert after == before
    assert len(LexicalIndex(source)) == 20 and len(work) < 20
