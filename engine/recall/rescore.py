"""MiniLM re-scoring: the top fused candidates of a (WordLlama) search, re-scored by all-MiniLM-L6-v2.

WordLlama's static token embeddings are cheap at ingest but weak alone; MiniLM (A-MEM's encoder) reads
word order and context. Re-encoding every note with MiniLM costs a transformer forward per note at ingest
(`encoder="minilm"`); re-scoring instead encodes only the question and the top `rescore_depth` candidates
at query time, each candidate's vector cached (per process, LRU over "speaker: content" text, so an
edited note is simply a new text). Each of those candidates gains `rescore_weight` x its MiniLM cosine,
min-max normalised over them; candidates below the depth gain nothing, so they stay below.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

import numpy as np

from engine.encode.base import Encoder
from engine.recall.fusion import minmax
from engine.state.tenant_state import TenantMemory

CACHE_SIZE = 1 << 15
"""Candidate vectors kept (384 float32 each: ~50 MB at most)."""
MAX_CHARS = 1000
"""Text past this is clipped before encoding (MiniLM truncates at 256 tokens anyway)."""


class VectorCache:
    """LRU text -> MiniLM vector, safe to share between searching threads."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._rows: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, encoder: Encoder, texts: list[str]) -> np.ndarray:
        with self._lock:
            have = {t: self._rows[t] for t in texts if t in self._rows}
            for t in have:
                self._rows.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in have))
        if missing:
            fresh = dict(zip(missing, encoder.encode_batch(missing), strict=True))
            have |= fresh
            with self._lock:
                self._rows.update(fresh)
                while len(self._rows) > self.size:
                    self._rows.popitem(last=False)
        return np.stack([have[t] for t in texts])

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()

    def __len__(self) -> int:
        return len(self._rows)


CACHE = VectorCache()


@functools.cache
def minilm() -> Encoder:
    """The process's MiniLM, loaded on first use (torch and the weights only when the lever is on)."""
    from engine.encode.minilm import MiniLMEncoder

    return MiniLMEncoder(device="cpu")


def candidate_text(tm: TenantMemory, slot: int) -> str:
    note = tm.notes[tm.index.ids[slot]]  # type: ignore[index]
    text = f"{note.speaker}: {note.content}" if note.speaker else note.content
    return text[:MAX_CHARS]


def rescore(
    tm: TenantMemory, query: str, slots: np.ndarray, scores: np.ndarray, weight: float, depth: int
) -> np.ndarray:
    """`scores` with the top `depth` candidates' MiniLM similarity to `query` (x weight) added."""
    if weight <= 0 or depth <= 0 or len(slots) == 0:
        return scores
    top = np.argsort(-scores, kind="stable")[:depth]
    encoder = minilm()
    query_vec = encoder.encode_batch([query[:MAX_CHARS]])[0]
    vectors = CACHE.vectors(encoder, [candidate_text(tm, int(s)) for s in slots[top]])
    out = scores.copy()
    out[top] += weight * minmax(vectors @ query_vec)
    return out
