"""A learned pair judge: does a newer statement retire the fact an older one stated? (decision step 5)

all-MiniLM-L6-v2 read as a cross-encoder: "[CLS] old [SEP] new [SEP]" with segment ids, mean-pooled, then
a logistic head. Low-rank adapters on each layer's attention and feed-forward matrices and the head were
trained by `bench/pair_judge_train.py` on statement pairs written blind (`bench/fact_pairs_*.jsonl`) and,
since round 18, on the scenario sets already scored (`SCENARIO_SETS` there); they ship beside this module
(`pair_judge.safetensors`, under 1 MB); the base weights are the MiniLM package's.
The adapters are merged into a copy of the base weights once per process, so a judgement is one plain
forward. Written on the project's own torch forward of MiniLM (`engine/encode/minilm.py`): transformers
and peft would be two large dependencies for a merge and a head.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from tokenizers import Encoding

from engine.encode import minilm
from engine.errors import ConfigError

__all__ = ["ADAPTERS", "PairJudge", "adapted", "load_judge", "pair_batch", "pair_judge", "pair_logits"]

log = logging.getLogger(__name__)
ADAPTERS = Path(__file__).with_name("pair_judge.safetensors")
MAX_TOKENS = 128
"""Both statements together: the decision asks the judge only about short statements."""


class PairJudge:
    """probabilities([(old, new), ...]) -> P(new retires old) per pair, batched on the CPU."""

    def __init__(self, path: Path = ADAPTERS) -> None:
        from safetensors import safe_open

        self._config, self._tokenizer, base = minilm.load_shared("cpu")
        with safe_open(str(path), framework="pt") as f:
            tensors = {k: f.get_tensor(k).float() for k in f.keys()}  # noqa: SIM118 (not a dict)
            scale = float((f.metadata() or {}).get("scale", "0") or 0)
        if not scale or "head.weight" not in tensors:
            raise ConfigError(f"{path}: not a pair-judge adapter file (no scale or head)")
        self._weights = {k: v.detach() for k, v in adapted(base, tensors, scale).items()}
        self._head = tensors["head.weight"], tensors["head.bias"]

    @torch.inference_mode()
    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        out = np.zeros(len(pairs), dtype=np.float32)
        encoded = [self._tokenizer.encode(old, new) for old, new in pairs]
        lengths = [min(len(e.ids), MAX_TOKENS) for e in encoded]
        for picked in minilm.plan_batches(lengths, minilm.BATCH_SIZE, minilm.BATCH_TOKENS):
            batch = pair_batch([encoded[i] for i in picked])
            logits = pair_logits(self._weights, self._config, self._head, *batch)
            out[picked] = torch.sigmoid(logits).numpy()
        return out


class _Adapted(Mapping[str, torch.Tensor]):
    """Base weights with W + scale * B @ A read for each adapted matrix (training reads it through autograd)."""

    def __init__(self, base: Mapping[str, torch.Tensor], adapters: Mapping[str, torch.Tensor], scale: float):
        self._base, self._adapters, self._scale = base, adapters, scale

    def __getitem__(self, name: str) -> torch.Tensor:
        weight = self._base[name]
        if (a := self._adapters.get(f"{name}.lora_a")) is None:
            return weight
        return weight + self._scale * (self._adapters[f"{name}.lora_b"] @ a)

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


def adapted(
    base: Mapping[str, torch.Tensor], adapters: Mapping[str, torch.Tensor], scale: float
) -> Mapping[str, torch.Tensor]:
    """The base weights as the adapters change them; `dict(...)` of it is the merged copy."""
    return _Adapted(base, adapters, scale)


def pair_batch(encoded: Sequence[Encoding]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids, segment ids and the attention mask of encoded pairs, padded to the longest (<= MAX_TOKENS)."""
    rows = [(e.ids[:MAX_TOKENS], e.type_ids[:MAX_TOKENS]) for e in encoded]
    longest = max(len(ids) for ids, _ in rows)
    ids = torch.zeros((len(rows), longest), dtype=torch.long)
    types = torch.zeros_like(ids)
    attention = torch.zeros((len(rows), longest), dtype=torch.bool)
    for row, (seq, segment) in enumerate(rows):
        ids[row, : len(seq)], types[row, : len(seq)] = torch.tensor(seq), torch.tensor(segment)
        attention[row, : len(seq)] = True
    return ids, types, attention


def pair_logits(
    weights: Mapping[str, torch.Tensor],
    config: minilm.BertConfig,
    head: tuple[torch.Tensor, torch.Tensor],
    ids: torch.Tensor,
    types: torch.Tensor,
    attention: torch.Tensor,
) -> torch.Tensor:
    hidden = minilm.bert_forward(weights, config, ids, attention, types)
    return (minilm.mean_pool(hidden, attention) @ head[0].T + head[1]).squeeze(-1)


@functools.cache
def pair_judge() -> PairJudge | None:
    """The shipped judge, loaded on first use (see `load_judge`)."""
    return load_judge(ADAPTERS)


def load_judge(path: Path) -> PairJudge | None:
    """The judge of an adapter file; None (decision step 5 off, the rules decide every pair) without the
    MiniLM package, or with a missing or unreadable file, which is logged."""
    from safetensors import SafetensorError

    try:
        minilm.model_dir()
    except ConfigError:
        return None  # the MiniLM package is optional, as for the sentence step
    try:
        return PairJudge(path)
    except (ConfigError, OSError, SafetensorError) as exc:
        log.warning("pair judge off, the rules decide every pair: %s: %s", path, exc)
        return None
