"""Encoders: `Encoder.encode_batch(texts) -> (n, dim) float32`, rows L2-normalised.

`make_encoder` picks one from `Config.encoder`: WordLlama (default, offline), all-MiniLM-L6-v2 (A-MEM's
encoder, offline from its wheel) or an OpenAI-compatible `/v1/embeddings` server.
"""

from __future__ import annotations

from engine.config import Config
from engine.cost import CostMeter
from engine.encode.base import Encoder, normalise
from engine.encode.wordllama import WordLlamaEncoder
from engine.errors import ConfigError

__all__ = ["Encoder", "WordLlamaEncoder", "make_encoder", "normalise"]


def make_encoder(config: Config, cost: CostMeter | None = None) -> Encoder:
    """The encoder `config.encoder` names; API calls are counted in `cost` (stage 'embed')."""
    if config.encoder.kind == "wordllama":
        return WordLlamaEncoder()
    if config.encoder.kind == "minilm":
        from engine.encode.minilm import MiniLMEncoder

        return MiniLMEncoder(device="cuda" if config.use_cuda else "cpu")
    if config.encoder.kind == "api":
        from engine.encode.api import APIEncoder

        return APIEncoder(config, cost)
    raise ConfigError(f"unknown encoder {config.encoder.kind!r}")
