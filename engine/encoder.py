"""The embedding swap point: `Encoder.encode_batch(texts) -> (n, dim) float32, rows L2-normalised`."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from engine.config import Config
from engine.errors import ConfigError


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray: ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class WordLlamaEncoder:
    """Offline default: WordLlama static embeddings whose weights ship inside the wheel (256-d)."""

    name = "wordllama"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self._model = _load_wordllama(dim)

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


def make_encoder(config: Config) -> Encoder:
    if config.encoder == "wordllama":
        return WordLlamaEncoder()
    if config.encoder == "minilm":
        from engine.minilm import MiniLMEncoder

        return MiniLMEncoder(device="cuda" if config.use_cuda else "cpu")
    if config.encoder == "api":
        from engine.llm.embeddings import APIEncoder

        return APIEncoder(config)
    raise ConfigError(f"unknown encoder {config.encoder!r}")
