"""WordLlama: the offline default encoder (static token embeddings, weights inside the wheel)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np

from engine.encode.base import normalise


class WordLlamaEncoder:
    """Offline default: WordLlama static embeddings whose weights ship inside the wheel (256-d)."""

    name = "wordllama"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._model = _load_wordllama(dim)

    def close(self) -> None:
        """Nothing to release: the weights are shared, cached per process."""

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise(self._model.embed(list(texts), norm=True, batch_size=256))


@functools.cache
def _load_wordllama(dim: int):
    import wordllama
    from wordllama import WordLlama

    # Plain WordLlama.load() tries a download; the weights are in the package directory.
    return WordLlama.load(cache_dir=os.path.dirname(wordllama.__file__), disable_download=True, dim=dim)
