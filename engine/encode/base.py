"""The embedding swap point: `Encoder.encode_batch(texts) -> (n, dim) float32, rows L2-normalised`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Encoder(Protocol):
    name: str
    dim: int

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray: ...

    def close(self) -> None:
        """Release threads, connections or device memory the encoder holds."""
        ...


def normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms
