"""The lexical half of hybrid recall: a tantivy BM25 index over index slots.

Documents are keyed by the same slot numbers as the vector index. The text is tokenised by
`engine.text.terms` (stems, stopwords) and handed to tantivy pre-split on whitespace, so scores match the
project's analyser; queries are built from term objects, never parsed, so user text needs no escaping.
Validity lives in fast fields (`visible_from`, `invalid_at`) and filters inside the query: "valid now"
and `as_of` cut the candidate set before BM25 ranks it.

Writes are buffered and applied in one commit before the next read (or once 16,384 documents wait: a
write-only bulk ingest would otherwise hold every document in RAM), so a batch of notes costs at most one
tantivy commit. The writer exists only during that commit: a tenant at rest holds no writer threads. A
write batch may commit its own writes with the tenant's lock released (`TenantMemory.settle`); a read
that finds that commit running does not wait for it and reads the index as it was before the batch.
With a `path` the index lives on disk (a derived index saved beside a snapshot); else in RAM.

Common terms (Lucene's CommonTermsQuery, Elasticsearch's `cutoff_frequency`): in a big index a term held
by more than COMMON of the documents costs a walk over its whole posting list (a chat word at 1M notes:
~300k postings) and adds little BM25 (IDF ~1.4 at 25%). `matches` lets such a term score only documents
that hold a rarer query term; when every term is common, documents holding the two rarest (then the
rarest alone, if those are too few). A hit's score is the full BM25 either way; what goes is documents
matching only common terms, which rank last. Block-max WAND does not save the walk here: recall reads the
best 1,024, not 10, and common terms' blocks all look alike. Measured on bench/scale.py's 1M tenant
(docs/scale.md, round 7).
"""

from __future__ import annotations

import errno
import math
import os
import shutil
import tempfile
import threading
import time
from operator import itemgetter
from pathlib import Path

import numpy as np
import tantivy
from tantivy import Occur

from engine.text import terms

FIELD = "text"
_NOW = 1e300
"""`invalid_at` of a note still valid (tantivy range bounds want finite numbers)."""
_HEAP = 32_000_000
_BUFFERED = 16_384
"""Documents buffered before a commit is forced (reads commit first anyway)."""
SCORED = 1024
"""Matches `matches` reads by slot (see there). Reading a hit into Python is most of a lexical search's
cost: 1,024 take 2.4 ms, 4,096 took 5.2 ms at 100k notes. Recall's candidates are the best 50, and a
conversation (LoCoMo: under 1,000 turns) is read whole either way."""
COMMON = 0.05
"""Share of the documents past which a query term is common (see the module docstring)."""
PRUNE_FROM = 50_000
"""Documents from which `matches` prunes common terms; a smaller index is searched exactly."""


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field(FIELD, stored=False, tokenizer_name="whitespace", index_option="freq")
    builder.add_integer_field("slot", stored=False, indexed=True, fast=True)
    builder.add_float_field("visible_from", stored=False, indexed=False, fast=True)
    builder.add_float_field("invalid_at", stored=False, indexed=False, fast=True)
    return builder.build()


class LexicalIndex:
    def __init__(self, path: Path | None = None) -> None:
        self.schema = _schema()
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._index = tantivy.Index(self.schema, path=str(path) if path else None)
        self._adds: dict[int, tantivy.Document] = {}
        self._deletes: set[int] = set()
        self._count = self._index.searcher().num_docs
        self._workdir: tempfile.TemporaryDirectory[str] | None = None
        self._last: tuple[str, tantivy.Query | None] | None = None
        self._flushing = threading.Lock()
        self.read_at = -math.inf
        """`time.monotonic()` of the last search read."""

    @classmethod
    def working_copy(cls, source: Path, scratch: Path | None = None) -> LexicalIndex:
        """An index opened on a private copy of `source` (a snapshot's files stay as they were written),
        made under `scratch` (else the system's temp folder).

        The copy hard-links the files where it can: tantivy never writes a file in place (segments are
        written once, meta.json and .managed.json are replaced by rename, deletes go to new files), so
        a link is as private as a copy, and opening a small tenant no longer writes its index out again
        (half of its first search; docs/scale.md, round 7). Across file systems it copies."""
        work = tempfile.TemporaryDirectory(prefix="amem-lexical-", dir=scratch, ignore_cleanup_errors=True)
        shutil.copytree(source, Path(work.name) / "index", copy_function=_link_or_copy)
        index = cls(Path(work.name) / "index")
        index._workdir = work  # removed with the index
        return index

    def __len__(self) -> int:
        self.flush()
        return self._count

    # --- writes (buffered) --------------------------------------------------------
    def upsert(self, slot: int, text: str, visible_from: float, invalid_at: float) -> None:
        self.upsert_terms(slot, " ".join(terms(text)), visible_from, invalid_at)

    def upsert_terms(self, slot: int, indexed: str, visible_from: float, invalid_at: float) -> None:
        """`upsert` of a text already reduced to its joined `terms` (engine.state.prepared)."""
        if len(self._adds) >= _BUFFERED:  # a write-only ingest never reads: commit before RAM fills
            self.flush()
        self._deletes.add(slot)
        self._adds[slot] = tantivy.Document(
            text=indexed,
            slot=slot,
            visible_from=float(visible_from),
            invalid_at=_NOW if math.isinf(invalid_at) else float(invalid_at),
        )

    def remove(self, slot: int) -> None:
        self._adds.pop(slot, None)
        self._deletes.add(slot)

    def flush(self, wait: bool = True) -> None:
        """Apply buffered writes in one commit. Without `wait` (a search), a commit already running on
        another thread is not waited for: the index reads as it was. Only the tenant's writer buffers
        writes, and never while a commit of its own runs, so the buffers are taken whole."""
        if not (self._deletes or self._adds) or not self._flushing.acquire(blocking=wait):
            return
        try:
            adds, deletes, self._adds, self._deletes = self._adds, self._deletes, {}, set()
            try:
                self._commit(adds, deletes)
            except BaseException:
                self._adds, self._deletes = adds | self._adds, deletes | self._deletes  # kept for a retry
                raise
            self._index.reload()
            self._count = self._index.searcher().num_docs
        finally:
            self._flushing.release()

    def _commit(self, adds: dict[int, tantivy.Document], deletes: set[int]) -> None:
        """Deletes first: an upsert replaces its slot's document."""
        try:
            writer = self._index.writer(_HEAP, 1)
            for slot in deletes:
                writer.delete_documents_by_term("slot", slot)
            for doc in adds.values():
                writer.add_document(doc)
            writer.commit()
            writer.wait_merging_threads()
        except ValueError as exc:  # tantivy reports a failed write (a full disk) as ValueError
            if "IO error" not in str(exc):
                raise
            raise OSError(errno.ENOSPC if "No space" in str(exc) else errno.EIO, str(exc)) from exc

    def read_recently(self, within_s: float) -> bool:
        return time.monotonic() - self.read_at < within_s

    # --- reads --------------------------------------------------------------------
    def top(
        self, query: str, depth: int, as_of: float | None = None, any_time: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """(slots, BM25 scores) of the best `depth` documents valid now, valid at `as_of`, or (with
        `any_time`) regardless of validity."""
        text = self._text_query(query)
        if text is None or depth <= 0:
            return _empty()
        parts = [(Occur.Must, text)]
        if not any_time:
            parts.extend((Occur.Must, _filter(q)) for q in self._validity(as_of))
        return self._run(tantivy.Query.boolean_query(parts), depth)

    def matches(self, query: str, limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(slots, BM25 scores) of the best `limit` matches regardless of validity: the recall levers
        (pseudo-relevance feedback, session neighbours, second round) read scores by slot, a slot not
        among them as 0. Exact on a tenant with fewer matches; past that a slot below the limit-th best
        reads 0 instead of a score too small to move it, and a search no longer collects every match
        (~all notes for a common word at 1M notes). From PRUNE_FROM documents, common terms only score
        documents that hold a rarer one (module docstring), so a document matching only those reads 0."""
        text = self._text_query(query)
        if text is None:
            return _empty()
        limit = min(SCORED if limit is None else limit, self._count)
        if self._count < PRUNE_FROM:
            return self._run(text, limit)
        pruned = self._pruned(query)
        for i, query_ in enumerate(pruned):
            found = self._run(query_, limit)
            if i == len(pruned) - 1 or len(found[0]) >= limit:
                return found
        return self._run(text, limit)  # no common term

    def _pruned(self, query: str) -> list[tantivy.Query]:
        """The queries `matches` tries in turn, common terms made optional (none: no term is common).
        Every term common: first the two rarest required, then (too few hits) the rarest."""
        searcher = self._index.searcher()
        freq = {w: searcher.doc_freq(FIELD, w) for w in set(terms(query))}
        known = [w for w in freq if freq[w]]  # a word in no document is neither rare nor common
        words = sorted(known, key=lambda w: (freq[w], w))
        rare = [w for w in words if freq[w] <= COMMON * self._count]
        if len(rare) == len(words) or len(words) == 1:
            return []
        if rare:
            return [self._required(rare, words, Occur.Should)]
        return [self._required(words[:2], words, Occur.Must), self._required(words[:1], words, Occur.Must)]

    def _required(self, need: list[str], words: list[str], occur: Occur) -> tantivy.Query:
        """Documents matching `need` (each with Must, any with Should), scored by every word."""
        need_q = tantivy.Query.boolean_query([(occur, self._term(w)) for w in need])
        rest = [(Occur.Should, self._term(w)) for w in words if w not in need]
        return tantivy.Query.boolean_query([(Occur.Must, need_q), *rest])

    def _term(self, word: str) -> tantivy.Query:
        return tantivy.Query.term_query(self.schema, FIELD, word)

    def doc_freq(self, term: str) -> int:
        """Documents holding `term` (an analysed term, as `engine.text.terms` gives it)."""
        self.flush(wait=False)
        return self._index.searcher().doc_freq(FIELD, term) if self._count else 0

    def scores_of(self, query: str, slots: np.ndarray) -> np.ndarray:
        """BM25 score of each given slot (0 where no query term occurs)."""
        out = np.zeros(len(slots), dtype=np.float32)
        text = self._text_query(query)
        if text is None or not len(slots):
            return out
        # A disjunction of slot terms: several times faster than a term-set query here.
        only = tantivy.Query.boolean_query(
            [(Occur.Should, tantivy.Query.term_query(self.schema, "slot", int(s))) for s in slots]
        )
        query_ = tantivy.Query.boolean_query([(Occur.Must, text), (Occur.Must, _filter(only))])
        found, scores = self._run(query_, len(slots))
        where = {int(s): i for i, s in enumerate(slots)}
        for slot, score in zip(found, scores, strict=True):
            out[where[int(slot)]] = score
        return out

    def _text_query(self, query: str) -> tantivy.Query | None:
        self.flush(wait=False)
        self.read_at = time.monotonic()
        if not self._count:
            return None
        if self._last is None or self._last[0] != query:  # a search asks twice: top, then scores_of
            words = sorted(set(terms(query)))
            built = tantivy.Query.boolean_query([(Occur.Should, self._term(w)) for w in words])
            self._last = (query, built if words else None)
        return self._last[1]

    def _validity(self, as_of: float | None) -> list[tantivy.Query]:
        q = tantivy.Query.range_query
        if as_of is None:
            return [q(self.schema, "invalid_at", tantivy.FieldType.Float, _NOW, None)]
        return [
            q(self.schema, "visible_from", tantivy.FieldType.Float, None, as_of),
            q(self.schema, "invalid_at", tantivy.FieldType.Float, as_of, None, include_lower=False),
        ]

    def _run(self, query: tantivy.Query, limit: int) -> tuple[np.ndarray, np.ndarray]:
        searcher = self._index.searcher()
        hits = searcher.search(query, limit, count=False).hits  # `hits` builds a new list on each read
        if not hits:
            return _empty()
        scores = np.fromiter(map(itemgetter(0), hits), dtype=np.float32, count=len(hits))
        slots = searcher.fast_field_values("slot", list(map(itemgetter(1), hits)))
        return np.fromiter(slots, dtype=np.int64, count=len(slots)), scores


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(src, dst)


def _filter(query: tantivy.Query) -> tantivy.Query:
    """A clause that selects without scoring (a Must clause would add its own score to the BM25 sum)."""
    return tantivy.Query.const_score_query(query, 0.0)


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
