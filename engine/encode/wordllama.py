"""WordLlama: the offline default encoder (static token embeddings, weights inside the wheel).

A WordLlama vector is the mean of the text's token embeddings. The library's `embed` pads each chunk of
256 texts to its longest and multiplies a mask over the padded (texts, tokens, dim) array; a write batch
mixes short turns with long evolved notes, so most of that array is padding. Here the texts are
tokenised unpadded, sorted by length into chunks (little padding), and the padding's rows are subtracted
from the sums instead of masked: the same vectors (to 1e-7), 2.2x faster on a batch of 4,000 chat notes
(0.23 s against 0.51). A text without tokens gets a zero vector (the library's was NaN).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.encode.base import normalise

_CHUNK = 256
"""Texts pooled per step: the gathered (texts, tokens, dim) array stays ~10 MB."""


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
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        return normalise(mean_pool(self._model.embedding, ids))


def mean_pool(table: np.ndarray, ids: list[np.ndarray]) -> np.ndarray:
    """Mean of `table`'s rows named by each id list (zeros for an empty one), in chunks of similar length."""
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    order = np.argsort(lengths, kind="stable")
    out = np.zeros((len(ids), table.shape[1]), dtype=np.float32)
    for start in range(0, len(ids), _CHUNK):
        rows = order[start : start + _CHUNK]
        sizes = lengths[rows]
        width = int(sizes.max())
        if width == 0:
            continue
        padded = np.zeros((len(rows), width), dtype=np.int64)  # padding reads row 0, taken off below
        padded[np.arange(width) < sizes[:, None]] = np.concatenate([ids[r] for r in rows])
        np.clip(padded, 0, len(table) - 1, out=padded)
        sums = table[padded].sum(axis=1) - (width - sizes)[:, None] * table[0]
        out[rows] = sums / np.maximum(sizes, 1)[:, None]
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
