"""APIEncoder: `Encoder` over an OpenAI-compatible /v1/embeddings endpoint (vLLM serves embedding models).

Texts go out in chunks of `encode_batch_size`, all chunks of a call concurrently (same gate, retries
and backoff as the chat client). Rows come back L2-normalised float32. The dimension is whatever the
model answers: learnt from the first call, or from a one-text probe when `dim` is read first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.config import Config
from engine.cost import CostMeter
from engine.encode.base import normalise
from engine.errors import ConfigError, LLMBadOutput
from engine.llm.client import LoopThread, OpenAIClient, gather_llm

_PROBE_TEXT = "dimension probe"


class APIEncoder:
    def __init__(self, config: Config, cost: CostMeter | None = None) -> None:
        if not config.encoder.url:
            raise ConfigError("encoder='api' needs embed_url (or AMEM_EMBED_URL)")
        self.model = config.encoder.model
        self.name = f"api:{self.model}"  # a store built with one embedding model refuses another
        self._batch_size = config.encoder.batch_size
        self._dim: int | None = None
        self._loop = LoopThread("amem-embed")
        url = config.encoder.url
        self._client = self._loop.create(
            lambda: OpenAIClient(config, base_url=url, model=self.model, cost=cost)
        )

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.encode_batch([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    @dim.setter
    def dim(self, value: int) -> None:
        """Declare the dimension up front (e.g. from a snapshot): skips the probe, checks every answer."""
        self._dim = value

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        chunks = [list(texts[i : i + self._batch_size]) for i in range(0, len(texts), self._batch_size)]
        results = self._loop.run(gather_llm([self._client.embed(chunk) for chunk in chunks]))
        for result in results:
            if isinstance(result, Exception):
                # An embedding has no fallback that keeps the index consistent: fail the whole call.
                raise result
        rows = [row for chunk in results for row in chunk]  # type: ignore[union-attr]
        return normalise(self._check(rows))

    def close(self) -> None:
        self._loop.run(self._client.aclose())
        self._loop.close()

    def _check(self, rows: list[list[float]]) -> np.ndarray:
        try:
            vectors = np.asarray(rows, dtype=np.float32)
        except (ValueError, TypeError):
            raise LLMBadOutput("embeddings: rows are not equal-length lists of numbers") from None
        if vectors.ndim != 2 or vectors.shape[1] == 0 or not np.isfinite(vectors).all():
            raise LLMBadOutput(f"embeddings: expected finite (n, dim) numbers, got shape {vectors.shape}")
        if self._dim is None:
            self._dim = int(vectors.shape[1])
        elif vectors.shape[1] != self._dim:
            raise LLMBadOutput(f"embeddings: dimension changed from {self._dim} to {vectors.shape[1]}")
        return vectors
