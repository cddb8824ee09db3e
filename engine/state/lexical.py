"""Incremental BM25 over index slots: the lexical half of hybrid recall.

Documents are keyed by the same slot numbers as the vector index, so one mask filters both.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from engine.text import terms


class BM25:
    def __init__(self, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.postings: dict[str, dict[int, int]] = {}
        self.doc_terms: dict[int, Counter[str]] = {}
        self.doc_len: dict[int, int] = {}
        self._total_len = 0

    def __len__(self) -> int:
        return len(self.doc_terms)

    def upsert(self, slot: int, text: str) -> None:
        self.remove(slot)
        counts = Counter(terms(text))
        self.doc_terms[slot] = counts
        self.doc_len[slot] = n = sum(counts.values())
        self._total_len += n
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[slot] = tf

    def remove(self, slot: int) -> None:
        counts = self.doc_terms.pop(slot, None)
        if counts is None:
            return
        self._total_len -= self.doc_len.pop(slot)
        for term in counts:
            posting = self.postings[term]
            del posting[slot]
            if not posting:
                del self.postings[term]

    def scores(self, query: str, num_slots: int) -> np.ndarray:
        """BM25 score of every slot (0 where no query term occurs)."""
        out = np.zeros(num_slots, dtype=np.float32)
        n_docs = len(self.doc_terms)
        if not n_docs:
            return out
        avg_len = self._total_len / n_docs
        for term in set(terms(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n_docs - len(posting) + 0.5) / (len(posting) + 0.5))
            slots = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
            tf = np.fromiter(posting.values(), dtype=np.float32, count=len(posting))
            lens = np.fromiter((self.doc_len[s] for s in posting), dtype=np.float32, count=len(posting))
            norm = self.k1 * (1 - self.b + self.b * lens / avg_len)
            out[slots] += idf * tf * (self.k1 + 1) / (tf + norm)
        return out
