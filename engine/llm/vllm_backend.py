"""In-process vLLM backend (`vllm.LLM.generate`) for bulk jobs on a GPU node.

`import vllm` happens only in here, and only when this backend is built, so CPU machines never need
vllm installed. Same prompts, schemas and validation as the HTTP backend (both sit under one
LLMAnnotator); decoding is guided by the stage's JSON schema. Prefix caching is on, and the fixed
system message comes first in every prompt, so a batch shares its instruction prefix.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from engine.config import Config
from engine.cost import CostMeter
from engine.errors import ConfigError, LLMError, LLMTruncated
from engine.llm.prompts import Prompt


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ConfigError(
            "annotator='vllm' needs the vllm package (pip install 'amem[gpu]') on a GPU node"
        ) from exc
    return vllm


def json_sampling_params(vllm: Any, schema: dict[str, Any], max_tokens: int) -> Any:
    """Greedy SamplingParams constrained to `schema` (StructuredOutputsParams, or the older guided API)."""
    sampling = vllm.SamplingParams
    try:
        from vllm.sampling_params import StructuredOutputsParams

        return sampling(
            temperature=0.0, max_tokens=max_tokens, structured_outputs=StructuredOutputsParams(json=schema)
        )
    except ImportError:
        from vllm.sampling_params import GuidedDecodingParams

        return sampling(
            temperature=0.0, max_tokens=max_tokens, guided_decoding=GuidedDecodingParams(json=schema)
        )


class VLLMBackend:
    name = "vllm"

    def __init__(self, config: Config, cost: CostMeter, llm: Any = None) -> None:
        """`llm` lets a caller share an already-loaded `vllm.LLM`; otherwise `config.llm.model` is loaded."""
        self._vllm = _import_vllm()
        self._llm = (
            llm if llm is not None else self._vllm.LLM(model=config.llm.model, enable_prefix_caching=True)
        )
        self._tokenizer = self._llm.get_tokenizer()
        self._max_tokens = config.llm.max_tokens
        self._cost = cost
        self._params: dict[tuple[str, int], Any] = {}

    def complete_batch(
        self, stage: str, prompts: Sequence[Prompt], schema: dict[str, Any], max_tokens: int | None = None
    ) -> list[str | LLMError]:
        if not prompts:
            return []
        key = (stage, max_tokens or self._max_tokens)
        if key not in self._params:
            self._params[key] = json_sampling_params(self._vllm, schema, key[1])
        texts = [
            self._tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
            for p in prompts
        ]
        started = time.perf_counter()
        try:
            outputs = self._llm.generate(texts, self._params[key], use_tqdm=False)
        except (RuntimeError, ValueError) as exc:
            # A failed generate (OOM, bad request) fails every item; the annotator falls each one back.
            error = LLMError(f"vllm generate failed for stage {stage}: {exc}")
            error.__cause__ = exc
            return [error] * len(prompts)
        self._record(stage, outputs, time.perf_counter() - started)
        return [_text(out.outputs[0], key[1]) for out in outputs]

    def close(self) -> None:
        self._llm = None

    def _record(self, stage: str, outputs: Sequence[Any], elapsed_s: float) -> None:
        self._cost.record(
            stage,
            calls=len(outputs),
            prompt_tokens=sum(len(out.prompt_token_ids or ()) for out in outputs),
            completion_tokens=sum(len(out.outputs[0].token_ids) for out in outputs),
            # Every request of an in-process batch waits for the batch: its latency is the batch's.
            latency_s=elapsed_s * len(outputs),
        )


def _text(completion: Any, max_tokens: int) -> str | LLMError:
    if getattr(completion, "finish_reason", None) == "length":
        return LLMTruncated(f"answer cut off at max_tokens={max_tokens} (finish_reason 'length')")
    return str(completion.text)
