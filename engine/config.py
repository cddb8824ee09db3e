"""The one typed configuration, threaded whole through every component."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from engine.errors import ConfigError

ENCODERS = ("wordllama", "minilm", "api")
ANNOTATORS = ("embedded", "llm", "vllm")


@dataclass(slots=True)
class Config:
    # --- encoder -------------------------------------------------------------
    encoder: str = "wordllama"
    """'wordllama' (offline, 256-d, in the wheel), 'minilm' (offline all-MiniLM-L6-v2, 384-d) or 'api'."""
    embed_url: str | None = None
    embed_model: str = "default"
    encode_batch_size: int = 512

    # --- annotator (the LLM stages) -----------------------------------------
    annotator: str = "embedded"
    """'embedded' (deterministic, offline), 'llm' (OpenAI-compatible server) or 'vllm' (in-process)."""
    llm_url: str | None = None
    llm_model: str = "default"
    llm_api_key: str = "EMPTY"
    llm_timeout_s: float = 60.0
    llm_max_in_flight: int = 64
    llm_max_tokens_in_flight: int = 262_144
    llm_retries: int = 3
    llm_backoff_s: float = 0.2
    llm_max_tokens: int = 512

    # --- write path -----------------------------------------------------------
    k_neighbours: int = 10
    """Candidates offered to the link judge for every new note (A-MEM's k)."""
    link_threshold: float = 0.75
    """Embedded judge: cosine at or above which a candidate is linked without shared keywords."""
    link_keyword_threshold: float = 0.55
    """Embedded judge: cosine at or above which two shared keywords are enough for a link."""
    max_links: int = 3
    """Most links the embedded judge makes per new note (the strongest candidates win)."""
    dedup_threshold: float = 0.9
    """Cosine (of embedding texts) at or above which a same-speaker note whose words are near-identical
    (token Jaccard >= dedup_jaccard) is merged into the stored one instead of stored again."""
    dedup_jaccard: float = 0.85
    max_keywords: int = 12
    max_tags: int = 5
    max_content_chars: int = 8000
    """Content past this is stored whole but truncated, with a marker, for the encoder and the LLM."""

    # --- recall ---------------------------------------------------------------
    lexical_weight: float = 0.7
    """Weight of BM25 in the hybrid score (0 = dense only)."""
    expand_links: bool = True
    expand_min_score: float = 0.8
    """A hit's score (relative to the best hit) needed for its links to join the results."""
    expand_decay: float = 0.5
    recency_half_life_days: float | None = None

    # --- storage ----------------------------------------------------------------
    wal: bool = True
    snapshot_every: int = 50_000
    """Log records after which the store writes a fresh snapshot and truncates the log."""
    read_only: bool = False
    max_open_tenants: int = 1024
    """Tenants of a persistent store kept in RAM at once; the least recently used is closed past this."""

    # --- device -------------------------------------------------------------
    device: str = "auto"
    """'auto' uses CUDA (FAISS GPU / torch kernels) when present, else CPU."""
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.encoder not in ENCODERS:
            raise ConfigError(f"encoder must be one of {ENCODERS}, got {self.encoder!r}")
        if self.annotator not in ANNOTATORS:
            raise ConfigError(f"annotator must be one of {ANNOTATORS}, got {self.annotator!r}")
        if self.annotator == "llm" and not self.llm_url:
            raise ConfigError("annotator='llm' needs llm_url (or AMEM_LLM_URL)")
        if self.encoder == "api" and not self.embed_url:
            raise ConfigError("encoder='api' needs embed_url (or AMEM_EMBED_URL)")
        if self.k_neighbours < 0:
            raise ConfigError("k_neighbours must be >= 0")
        if not 0.0 < self.dedup_threshold <= 1.0:
            raise ConfigError("dedup_threshold must be in (0, 1]")
        if not 0.0 <= self.lexical_weight <= 1.0:
            raise ConfigError("lexical_weight must be in [0, 1]")
        if self.llm_max_in_flight < 1 or self.llm_retries < 0:
            raise ConfigError("llm_max_in_flight must be >= 1 and llm_retries >= 0")
        if self.max_open_tenants < 1:
            raise ConfigError("max_open_tenants must be >= 1")
        if self.max_content_chars < 64:
            raise ConfigError("max_content_chars must be >= 64")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ConfigError("device must be 'auto', 'cpu' or 'cuda'")

    @classmethod
    def from_env(cls, **overrides: object) -> Config:
        """Defaults, then AMEM_* environment variables, then explicit overrides."""
        env: dict[str, object] = {}
        if url := os.environ.get("AMEM_LLM_URL"):
            env.update(llm_url=url, annotator="llm")
        if model := os.environ.get("AMEM_LLM_MODEL"):
            env["llm_model"] = model
        if key := os.environ.get("AMEM_LLM_API_KEY"):
            env["llm_api_key"] = key
        if url := os.environ.get("AMEM_EMBED_URL"):
            env.update(embed_url=url, encoder="api")
        given = {k: v for k, v in overrides.items() if v is not None}
        if given.get("llm_url") and "annotator" not in given:
            given["annotator"] = "llm"  # --llm-url alone means: use that server
        if given.get("embed_url") and "encoder" not in given:
            given["encoder"] = "api"
        env.update(given)
        return cls(**env)  # type: ignore[arg-type]

    def with_(self, **changes: object) -> Config:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def use_cuda(self) -> bool:
        if self.device == "cpu":
            return False
        from engine.device import cuda_available

        ok = cuda_available()
        if self.device == "cuda" and not ok:
            raise ConfigError("device='cuda' but no CUDA device is visible")
        return ok
