"""The one typed configuration: a `Config` of sections, each handed to the component it configures.

    Config
    ├── encoder: EncoderConfig   the embedding model (encode/)
    ├── llm:     LLMConfig       the annotator and its LLM server (annotate/, llm/)
    ├── write:   WriteConfig     linking, evolution, merges, clipping (write/)
    ├── recall:  RecallConfig    hybrid fusion and graph expansion (recall/)
    ├── storage: StorageConfig   log, snapshots, open tenants (storage/)
    ├── service: ServiceConfig   request body cap, queue bound and deadline (service/)
    ├── index:   IndexConfig     vector index tiers: exact flat, then HNSW (state/vector_index.py)
    └── device:  Device          where FAISS and the kernels run

`Config.with_(**flat)` and `Config.from_env(**flat)` also take the flat names the CLI and benches use
(`wal=False`, `llm_url=...`, `k_neighbours=0`): `FLAT` maps each to its section's field.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any

from engine.errors import ConfigError


class EncoderKind(StrEnum):
    WORDLLAMA = "wordllama"
    """Offline, 256-d, weights inside the wheel."""
    MINILM = "minilm"
    """Offline all-MiniLM-L6-v2 (A-MEM's encoder), 384-d."""
    API = "api"
    """An OpenAI-compatible `/v1/embeddings` server."""


class AnnotatorKind(StrEnum):
    EMBEDDED = "embedded"
    """Deterministic offline annotator."""
    LLM = "llm"
    """An OpenAI-compatible server (vLLM, llama-server, ...)."""
    VLLM = "vllm"
    """vLLM in process."""


class Dialect(StrEnum):
    """How `response_format` is sent: servers disagree on the JSON-schema form."""

    AUTO = "auto"
    """json_schema first; on a format rejection json_object, then none (decided on the first call)."""
    JSON_SCHEMA = "json_schema"
    """OpenAI's form: vLLM, llama.cpp's llama-server, OpenAI."""
    JSON_OBJECT = "json_object"
    """{"type": "json_object", "schema": ...}: llama-cpp-python's server."""
    NONE = "none"
    """No response_format: the prompt alone asks for JSON (answers are still validated)."""


class Device(StrEnum):
    AUTO = "auto"
    CPU = "cpu"
    CUDA = "cuda"


@dataclass(slots=True, frozen=True)
class EncoderConfig:
    kind: EncoderKind = EncoderKind.WORDLLAMA
    url: str | None = None
    model: str = "default"
    batch_size: int = 512

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", _enum(EncoderKind, self.kind, "encoder"))
        if self.kind is EncoderKind.API and not self.url:
            raise ConfigError("encoder='api' needs embed_url (or AMEM_EMBED_URL)")


@dataclass(slots=True, frozen=True)
class LLMConfig:
    annotator: AnnotatorKind = AnnotatorKind.EMBEDDED
    url: str | None = None
    model: str = "default"
    api_key: str = "EMPTY"
    timeout_s: float = 60.0
    max_in_flight: int = 64
    max_tokens_in_flight: int = 262_144
    retries: int = 3
    backoff_s: float = 0.2
    max_tokens: int = 512
    dialect: Dialect = Dialect.AUTO
    server_slots: int | None = None
    """Requests the server works at once (llama-server --parallel); None asks llama.cpp's /props, else
    assumes max_in_flight. The timeout of a request admitted behind more than this many is scaled up."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "annotator", _enum(AnnotatorKind, self.annotator, "annotator"))
        object.__setattr__(self, "dialect", _enum(Dialect, self.dialect, "llm_dialect"))
        if (
            self.timeout_s <= 0
            or self.max_tokens < 1
            or (self.server_slots is not None and self.server_slots < 1)
        ):
            raise ConfigError("llm_timeout_s must be > 0, llm_max_tokens >= 1 and llm_server_slots >= 1")
        if self.annotator is AnnotatorKind.LLM and not self.url:
            raise ConfigError("annotator='llm' needs llm_url (or AMEM_LLM_URL)")
        if self.max_in_flight < 1 or self.retries < 0:
            raise ConfigError("llm_max_in_flight must be >= 1 and llm_retries >= 0")


@dataclass(slots=True, frozen=True)
class WriteConfig:
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
    max_content_bytes: int = 1 << 20
    """Largest content (UTF-8 bytes) accepted at all; larger is refused (HTTP 413) before any work."""
    max_batch_items: int = 1000
    """Most interactions in one add call (HTTP 413 past this)."""
    fact_judge: bool = True
    """Embedded annotator: let the learned pair judge (engine/annotate/facts/pair_judge.py, decision step
    5) retire a fact the rules kept for want of a shared attribute or a change signal."""

    def __post_init__(self) -> None:
        if self.k_neighbours < 0:
            raise ConfigError("k_neighbours must be >= 0")
        if not 0.0 < self.dedup_threshold <= 1.0:
            raise ConfigError("dedup_threshold must be in (0, 1]")
        if self.max_content_chars < 64:
            raise ConfigError("max_content_chars must be >= 64")
        if self.max_content_bytes < 1 or self.max_batch_items < 1:
            raise ConfigError("max_content_bytes and max_batch_items must be >= 1")


@dataclass(slots=True, frozen=True)
class RecallConfig:
    lexical_weight: float = 0.7
    """Weight of BM25 in the hybrid score (0 = dense only)."""
    expand_links: bool = True
    expand_min_score: float = 0.8
    """A hit's score (relative to the best hit) needed for its links to join the results."""
    expand_decay: float = 0.5
    recency_half_life_days: float | None = None
    max_query_bytes: int = 64 << 10
    """Largest query (UTF-8 bytes) accepted; larger is refused (HTTP 413) before it reaches the encoder."""
    max_query_chars: int = 2000
    """A query past this is clipped for the encoder and BM25, so a search costs the same at any length."""
    max_batch_queries: int = 64
    """Most queries in one `search_many` (and `POST /v1/search/batch`) call; more is refused (HTTP 413)."""
    # Query-side levers (engine.recall: fusion, boosts, rounds); defaults from docs/recall.md's table.
    fusion: str = "minmax"
    """How dense and lexical scores combine: "minmax", "rrf" or "zscore" (engine.recall.fusion)."""
    strip_names: bool = False
    """Take participants' names out of the lexical query (they match nearly every turn)."""
    speaker_boost: float = 0.3
    """Added to turns by a participant the query names."""
    speaker_addressed: bool = False
    """Also favour (by half) turns that name that participant."""
    temporal_boost: float = 0.1
    """Added, for "when / how long" questions, to turns that carry a time expression."""
    neighbour_weight: float = 0.2
    """Share of the best neighbouring turn's score a candidate gains (session neighbours)."""
    neighbour_gap_s: float = 600.0
    neighbour_window: int = 2
    """Turns on each side that count as neighbours (a neighbour d turns away shares score / d)."""
    """Two notes this close in time (and adjacent) are session neighbours."""
    second_round_weight: float = 0.0
    """Weight of a second retrieval round seeded by the first round's top hits (multi-hop)."""
    prf_weight: float = 0.3
    """BM25 pseudo-relevance feedback: weight of the top lexical hits' keywords as extra query terms."""
    prf_content_seeds: bool = True
    """Pick the feedback seeds by the query without the participants it names (a name ties every turn of
    that speaker), and scale the feedback to the seeds' score. On since facts v3: facts dev now_ok
    0.481 -> 0.635, LoCoMo held-out R@10 0.739 -> 0.736, all 0.753 -> 0.754 (docs/recall.md, "PRF seeds")."""
    hedged_penalty: float = 0.1
    """Taken from hypothetical, negated and other parties' statements when the question asks about none of
    these (engine.recall.boosts): facts dev now_ok +0.03, LoCoMo dev R@10 unchanged or better (docs/facts.md v3)."""
    event_penalty: float = 0.2
    """Taken from questions and narrated events when the question asks what holds now (engine.recall.boosts).
    0.2 from facts dev (0.1 / 0.2 / 0.3: now_ok 0.760 -> 0.798 / 0.808 / 0.808) and LoCoMo's tuned split
    (R@10 0.776 -> 0.783 at 0.2, 0.775 at 0.3): docs/facts.md round 18."""
    short_turn_penalty: float = 0.2
    """Taken (in proportion) from turns shorter than 60 characters."""
    rescore_weight: float = 0.0
    """MiniLM re-scoring (opt-in, engine.recall.rescore): the top `rescore_depth` candidates gain this
    x their all-MiniLM-L6-v2 similarity to the query (min-max over them). Costs a transformer forward
    per query plus one per uncached candidate: see docs/recall.md's encoder table."""
    rescore_depth: int = 50
    center_queries: float = 1.0
    """Share of the tenant's mean vector taken from the query before the dense search (hubness
    reduction: the dense score becomes `(q - a * mean) . d`, so notes close to everything, such as
    chit-chat, lose their edge over specific ones); 0 turns it off. engine.recall.search, docs/recall.md."""
    successor_weight: float = 1.0
    """A retired note that matches a "now" search hands this share of its score to the note that replaced
    it (engine.recall.successors); 0 turns it off."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.lexical_weight <= 1.0:
            raise ConfigError("lexical_weight must be in [0, 1]")
        if self.max_query_bytes < 1 or self.max_query_chars < 64 or self.max_batch_queries < 1:
            raise ConfigError("max_query_bytes and max_batch_queries must be >= 1 and max_query_chars >= 64")
        if self.fusion not in ("minmax", "rrf", "zscore"):
            raise ConfigError(f"fusion must be 'minmax', 'rrf' or 'zscore', got {self.fusion!r}")
        if self.neighbour_window < 1:
            raise ConfigError("neighbour_window must be >= 1")
        if min(self.rescore_weight, self.rescore_depth, self.successor_weight, self.center_queries) < 0:
            raise ConfigError(
                "rescore_weight, rescore_depth, successor_weight and center_queries must be >= 0"
            )


@dataclass(slots=True, frozen=True)
class StorageConfig:
    wal: bool = True
    snapshot_every: int = 50_000
    """Log records after which the store writes a fresh snapshot and truncates the log."""
    snapshot_held: int = 65_536
    """Note records held in RAM (written since the last snapshot) after which a snapshot moves them to its
    memory-mapped state file; the bar rises with the tenant (at least as many as are already on disk),
    so snapshots come at 64k, 128k, 256k, ... notes and their cost stays O(1) amortised per note."""
    snapshot_held_max: int = 262_144
    """Where that rising bar stops: past it a snapshot comes every this many notes written, so a crash
    leaves at most this many to replay from the log (replay runs at ~600 notes/s on a 1M tenant on 2
    cores: ~7 min here, against ~28 min for the 1M a doubling bar allows). Each snapshot rewrites the
    whole tenant, so past the cap their cost grows with the tenant (docs/scale.md, round 13)."""
    read_only: bool = False
    max_open_tenants: int = 1024
    """Tenants of a persistent store kept in RAM at once; the least recently used is closed past this."""
    evict_snapshot_min: int = 1024
    """A tenant closed to make room snapshots only when it holds at least this many notes written since its
    last snapshot; a smaller one leaves them in its log (already durable), replayed when it opens again.
    A snapshot of a 100-note tenant (a tantivy index and six fsynced files) took longer than the replay,
    and it ran under the pool's lock, stalling every tenant's requests (docs/scale.md)."""
    compact_log: bool = True
    """Log records in format 2 (what the tenant already holds is referred to, not repeated; about half
    the bytes); False writes format 1 (every note and vector in full). Both replay."""
    store_lock: bool = True
    """A writable persistent Memory holds the store-level writer lock (`<store>/LOCK`), so a second
    writer (serve, ingest, mcp) refuses to start. Off only for Ray ingest shards, whose driver holds it."""

    def __post_init__(self) -> None:
        if self.max_open_tenants < 1 or self.evict_snapshot_min < 0:
            raise ConfigError("max_open_tenants must be >= 1 and evict_snapshot_min >= 0")
        if self.snapshot_held < 1 or self.snapshot_held_max < self.snapshot_held:
            raise ConfigError("snapshot_held must be >= 1 and snapshot_held_max >= snapshot_held")


@dataclass(slots=True, frozen=True)
class ServiceConfig:
    max_request_bytes: int = 16 << 20
    """Largest HTTP request body; larger is refused with 413 before it is parsed."""
    max_waiting: int = 64
    """Requests allowed to wait for a worker thread; past this the service answers 503 with Retry-After."""
    request_timeout_s: float = 30.0
    """A request still waiting for a worker after this long gets 503 with Retry-After."""

    def __post_init__(self) -> None:
        if self.max_request_bytes < 1 or self.max_waiting < 0 or self.request_timeout_s <= 0:
            raise ConfigError("max_request_bytes >= 1, max_waiting >= 0 and request_timeout_s > 0 required")


@dataclass(slots=True, frozen=True)
class IndexConfig:
    """The vector index tiers (state/vector_index.py); numbers from bench/index_tiers.py, see docs/index-tiers.md."""

    ann_min_notes: int = 20_000
    """Notes at which a tenant's exact flat index becomes an HNSW graph (back to flat below half of it)."""
    ann_m: int = 32
    """HNSW graph degree."""
    ann_ef_construction: int = 160
    """HNSW build beam. On bench/scale.py's 100k tenant, recall@10 at efSearch 256 is 0.973 with 160 (0.926
    with 80, 0.909 with 40) for 0.41 s per 1,000 inserted notes (0.24, 0.18): a query-time beam buying the
    same recall would cost every search instead (efSearch 512 on the 40-graph: 0.962, +1 ms)."""
    ann_ef_search: int = 256
    """HNSW search beam: +~1 ms over 128 at 100k; see ann_ef_construction and docs/scale.md (round 4)."""
    ann_ef_grow_from: int = 100_000
    """Past this many notes the search beam grows with the tenant, x(1 + log10(notes / this)): a fixed beam
    loses recall as the graph grows (1M notes: recall@10 0.922 at 256, 0.950 at 384, 0.971 at 512 = the
    grown beam, for +1.3 ms; docs/scale.md, round 5)."""
    ann_ef_write: int = 32
    """HNSW beam of the write path's neighbour search. A new note lies among stored ones, where the graph
    routes well: on a 100k-note chat tenant recall@10 is 0.985 at 32 (0.998 at 128, for 3x the time)."""
    ann_exact_max: int = 20_000
    """A validity mask allowing at most this many notes is searched exactly over just those rows."""
    ann_stale_fraction: float = 0.02
    """Rebuild the graph once this share of its nodes were re-embedded far from where they were linked
    (until then those rows are searched exactly beside the graph)."""

    def __post_init__(self) -> None:
        if self.ann_ef_grow_from < 1:
            raise ConfigError("ann_ef_grow_from must be >= 1 (a very large value keeps the beam fixed)")
        if self.ann_min_notes < 2 or self.ann_m < 4 or min(self.ann_ef_search, self.ann_ef_write) < 1:
            raise ConfigError("ann_min_notes must be >= 2, ann_m >= 4, ann_ef_search and ann_ef_write >= 1")

    def search_beam(self, notes: int) -> int:
        """The HNSW search beam for a tenant of `notes` notes (see ann_ef_grow_from)."""
        if notes <= self.ann_ef_grow_from:
            return self.ann_ef_search
        return round(self.ann_ef_search * (1 + math.log10(notes / self.ann_ef_grow_from)))


_SECTIONS = {
    "encoder": EncoderConfig,
    "llm": LLMConfig,
    "write": WriteConfig,
    "recall": RecallConfig,
    "storage": StorageConfig,
    "service": ServiceConfig,
    "index": IndexConfig,
}
FLAT: dict[str, tuple[str, str]] = {
    "encoder": ("encoder", "kind"),
    "embed_url": ("encoder", "url"),
    "embed_model": ("encoder", "model"),
    "encode_batch_size": ("encoder", "batch_size"),
    "annotator": ("llm", "annotator"),
    **{f"llm_{f.name}": ("llm", f.name) for f in fields(LLMConfig) if f.name != "annotator"},
    **{
        f.name: (s, f.name)
        for s in ("write", "recall", "storage", "service", "index")
        for f in fields(_SECTIONS[s])
    },
}
"""Flat name -> (section, field)."""


@dataclass(slots=True, frozen=True)
class Config:
    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    write: WriteConfig = field(default_factory=WriteConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    service: ServiceConfig = field(default_factory=ServiceConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    device: Device = Device.AUTO
    """AUTO uses CUDA (FAISS GPU / torch kernels) when present, else CPU."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", _enum(Device, self.device, "device"))

    @classmethod
    def of(cls, **flat: Any) -> Config:
        """Defaults with flat overrides: `Config.of(wal=False, k_neighbours=0)`."""
        return cls().with_(**flat)

    @classmethod
    def from_env(cls, **overrides: Any) -> Config:
        """Defaults, then AMEM_* environment variables, then explicit (flat) overrides; None = not given."""
        env: dict[str, Any] = {}
        if url := os.environ.get("AMEM_LLM_URL"):
            env.update(llm_url=url, annotator="llm")
        for name in ("model", "api_key", "dialect"):
            if value := os.environ.get(f"AMEM_LLM_{name.upper()}"):
                env[f"llm_{name}"] = value
        for name, kind in (("max_in_flight", int), ("timeout_s", float)):
            if value := os.environ.get(f"AMEM_LLM_{name.upper()}"):
                env[f"llm_{name}"] = _number(kind, value, f"AMEM_LLM_{name.upper()}")
        if url := os.environ.get("AMEM_EMBED_URL"):
            env.update(embed_url=url, encoder="api")
        given = {k: v for k, v in overrides.items() if v is not None}
        if given.get("llm_url") and "annotator" not in given:
            given["annotator"] = "llm"  # --llm-url alone means: use that server
        if given.get("embed_url") and "encoder" not in given:
            given["encoder"] = "api"
        env.update(given)
        return cls().with_(**env)

    def with_(self, **flat: Any) -> Config:
        """A copy with flat-named changes (see FLAT); `device` and whole sections by their own names."""
        by_section: dict[str, dict[str, Any]] = {}
        top: dict[str, Any] = {}
        for name, value in flat.items():
            if (name in _SECTIONS and not isinstance(value, str)) or name == "device":
                top[name] = value
            elif name in FLAT:
                section, key = FLAT[name]
                by_section.setdefault(section, {})[key] = value
            else:
                raise ConfigError(f"unknown setting {name!r}")
        for section, changes in by_section.items():
            top[section] = replace(top.get(section, getattr(self, section)), **changes)
        return replace(self, **top)

    @property
    def use_cuda(self) -> bool:
        if self.device is Device.CPU:
            return False
        from engine.device import cuda_available

        ok = cuda_available()
        if self.device is Device.CUDA and not ok:
            raise ConfigError("device='cuda' but no CUDA device is visible")
        return ok


def _enum(kind: type[StrEnum], value: object, name: str) -> Any:
    try:
        return kind(str(value))
    except ValueError:
        raise ConfigError(f"{name} must be one of {tuple(m.value for m in kind)}, got {value!r}") from None


def _number(kind: type[int] | type[float], value: str, name: str) -> int | float:
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(
            f"{name} must be a{'n integer' if kind is int else ' number'}, got {value!r}"
        ) from None
