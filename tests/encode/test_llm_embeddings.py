"""APIEncoder over the stand-in's /v1/embeddings: batching, normalisation, dim discovery, faults."""

from __future__ import annotations

import numpy as np
import pytest
from llm_server import StandIn, dead_url, embed

from engine.config import Config
from engine.cost import CostMeter
from engine.encode.api import APIEncoder
from engine.errors import ConfigError, LLMBadOutput, LLMRetryable

pytest_plugins = ["conftest_llm"]


def encoder(url: str, cost: CostMeter | None = None, **overrides: object) -> APIEncoder:
    settings: dict[str, object] = {"encode_batch_size": 4, "llm_retries": 2, "llm_backoff_s": 0.002}
    settings.update(overrides)
    return APIEncoder(Config.of(encoder="api", embed_url=url, embed_model="e5", **settings), cost)  # type: ignore[arg-type]


def texts(n: int, extra: str = "") -> list[str]:
    return [f"note {i} about lisbon trams and {['fado', 'tiles', 'hills'][i % 3]} {extra}" for i in range(n)]


def test_batches_normalises_and_keeps_order(llm_server: StandIn) -> None:
    cost = CostMeter()
    enc = encoder(llm_server.url, cost)
    try:
        vectors = enc.encode_batch(texts(10))
        assert enc.dim == llm_server.state.embed_dim == vectors.shape[1]
    finally:
        enc.close()
    assert vectors.shape == (10, 48) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.asarray([embed(t, 48) for t in texts(10)], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-6)  # the server answers rows reversed; we sort by index
    assert len(llm_server.state.ok("embed")) == 3  # 10 texts in batches of 4
    assert cost.stages["embed"].calls == 3 and cost.stages["embed"].prompt_tokens > 0


def test_dim_from_a_probe_and_empty_input(llm_server: StandIn) -> None:
    llm_server.state.embed_dim = 20
    enc = encoder(llm_server.url)
    try:
        assert enc.dim == 20
        assert enc.encode_batch([]).shape == (0, 20)
    finally:
        enc.close()
        llm_server.state.embed_dim = 48
    assert len(llm_server.state.ok("embed")) == 1


def test_server_error_is_retried(llm_server: StandIn) -> None:
    cost = CostMeter()
    enc = encoder(llm_server.url, cost)
    try:
        batch = texts(6)
        batch[0] += " <<fault:embed:500>>"  # one faulty text in each batch of 4
        batch[4] += " <<fault:embed:500>>"
        vectors = enc.encode_batch(batch)
    finally:
        enc.close()
    assert vectors.shape == (6, 48) and cost.stages["embed"].retries == 2  # both batches failed once


def test_dead_server_raises(llm_server: StandIn) -> None:
    enc = encoder(dead_url())
    try:
        with pytest.raises(LLMRetryable):
            enc.encode_batch(texts(3))
    finally:
        enc.close()


def test_needs_a_url() -> None:
    with pytest.raises(ConfigError):
        APIEncoder(Config())


def test_declared_dim_skips_the_probe_and_is_checked(llm_server: StandIn) -> None:
    enc = encoder(llm_server.url)
    try:
        enc.dim = 48
        assert enc.dim == 48 and llm_server.state.seen == []
        enc.dim = 64
        with pytest.raises(LLMBadOutput, match="dimension"):
            enc.encode_batch(texts(2))
    finally:
        enc.close()
