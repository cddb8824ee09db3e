"""LLM backends for the A-MEM stages: an OpenAI-compatible server (vLLM) or in-process vLLM."""

from __future__ import annotations

from engine.annotate.protocol import Annotator
from engine.config import Config
from engine.cost import CostMeter
from engine.errors import ConfigError
from engine.llm.annotator import Backend, LLMAnnotator
from engine.llm.prompts import PROMPT_VERSION

__all__ = ["PROMPT_VERSION", "Backend", "LLMAnnotator", "make_llm_annotator"]


def make_llm_annotator(config: Config, cost: CostMeter, fallback: Annotator) -> Annotator:
    """The annotator for config.llm.annotator 'llm' (HTTP server) or 'vllm' (in-process).

    `fallback` (the embedded annotator) does the items the LLM could not; they are counted in `cost`.
    """
    backend: Backend
    if config.llm.annotator == "llm":
        from engine.llm.client import HTTPBackend

        backend = HTTPBackend(config, cost)
    elif config.llm.annotator == "vllm":
        from engine.llm.vllm_backend import VLLMBackend

        backend = VLLMBackend(config, cost)
    else:
        raise ConfigError(f"make_llm_annotator needs annotator 'llm' or 'vllm', got {config.llm.annotator!r}")
    return LLMAnnotator(backend, config, cost, fallback)
