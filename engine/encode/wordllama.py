"""WordLlama: the offline default encoder (static token embeddings, weights inside the wheel).

A WordLlama vector is the mean of the text's token embeddings. The library's `embed` gathers a padded
(texts, tokens, dim) array per chunk of 256 texts and sums it under a mask: for a write batch's notes
(~150 tokens each, with their keywords and context) that is ~150 KB of rows copied per text. Here each
chunk becomes a count matrix (texts x distinct tokens) times those tokens' rows, one BLAS product: the
same vectors (to 1e-6; tests/encode/test_wordllama.py). 4,000 notes of a stored tenant encode in 0.29 s
against 1.39 s through `embed`; the tokenizer is now most of it (the pooling 0.03 s). A text without
tokens gets a zero vector (the library's was NaN).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.encode.base import normalise

_CHUNK = 256
"""Texts pooled per product: the count matrix stays ~256 x a few thousand distinct tokens."""


class WordLlamaEncoder:
    """Offline default: WordLlama static embeddings whose weights ship inside the wheel (256-d)."""

    name = "wordllama"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._model = _load_wordllama(dim)
        self._tokenizer = _unpadded_tokenizer(dim)

    def close(self) -> None:
        """Nothing to release: the weights are shared, cached per process."""

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # _fast: no character offsets, which nothing here reads (a fifth of the tokenizer's time)
        encodings = self._tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        return normalise(mean_pool(self._model.embedding, ids))


def mean_pool(table: np.ndarray, ids: list[np.ndarray]) -> np.ndarray:
    """Mean of `table`'s rows named by each id list (zeros for an empty one)."""
    sizes = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    out = np.zeros((len(ids), table.shape[1]), dtype=np.float32)
    for start in range(0, len(ids), _CHUNK):
        part = sizes[start : start + _CHUNK]
        n = len(part)
        if not part.any():
            continue
        flat = np.clip(np.concatenate(ids[start : start + n]), 0, len(table) - 1)
        distinct, column = np.unique(flat, return_inverse=True)
        row = np.repeat(np.arange(n), part)
        counts = np.bincount(row * len(distinct) + column, minlength=n * len(distinct))
        sums = counts.reshape(n, len(distinct)).astype(np.float32) @ table[distinct]
        out[start : start + n] = sums / np.maximum(part, 1)[:, None]
    return out


@functools.cache
def _load_wordllama(dim: int) -> Any:
    import wordllama
    from wordllama import WordLlama

    # Plain WordLlama.load() tries a download; the weights are in the package directory.
    return WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True, dim=dim)


@functools.cache
def _unpadded_tokenizer(dim: int) -> Any:
    """A copy of the model's tokenizer without its padding (the model's own keeps it for `embed`)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(_load_wordllama(dim).tokenizer.to_str())
    tokenizer.no_padding()
    return tokenizer
