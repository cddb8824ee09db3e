"""`amem` command line: ingest, search, show, stats, reannotate, serve, mcp, demo."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.config import Config
from engine.errors import AmemError, InputError
from engine.extensions import ray_runner


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except AmemError as exc:
        print(f"amem: error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="amem", description="Agentic memory (A-MEM) engine")
    sub = p.add_subparsers(required=True, metavar="COMMAND")
    _ingest_parser(sub.add_parser("ingest", help="ingest a chat log (JSONL or LoCoMo JSON)"))
    s = sub.add_parser("search", help="search a tenant's memory")
    s.add_argument("query")
    _common(s)
    s.add_argument("--k", type=int, default=10)
    s.add_argument("--as-of", default=None, help="ISO-8601 time: what was true then")
    s.add_argument("--include-superseded", action="store_true")
    s.add_argument("--no-expand", action="store_true", help="no graph expansion")
    s.add_argument("--json", action="store_true")
    s.set_defaults(run=_search)
    sh = sub.add_parser("show", help="show one note (and its history)")
    sh.add_argument("id")
    _common(sh)
    sh.add_argument("--history", action="store_true")
    sh.set_defaults(run=_show)
    st = sub.add_parser("stats", help="notes, links, versions and LLM cost per tenant")
    st.add_argument("--store", required=True, type=Path)
    st.set_defaults(run=_stats)
    r = sub.add_parser("reannotate", help="redo notes whose LLM annotation fell back to the embedded one")
    _common(r)
    _llm_flags(r)
    r.set_defaults(run=_reannotate)
    sv = sub.add_parser("serve", help="run the recall HTTP service")
    sv.add_argument("--store", required=True, type=Path)
    sv.add_argument("--keys", type=Path, help="API keys file (JSON)")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8420)
    sv.add_argument("--ray", action="store_true", help="deploy with Ray Serve replicas")
    sv.add_argument("--replicas", type=int, default=2)
    sv.add_argument(
        "--workers", type=int, default=1, help="processes on this machine: one writer, the rest readers"
    )
    sv.set_defaults(run=_serve)
    m = sub.add_parser("mcp", help="serve one tenant's memory to an MCP client over stdio")
    _common(m)
    _llm_flags(m)
    m.set_defaults(run=_mcp)
    d = sub.add_parser("demo", help="ingest the bundled sample chat log and answer a few questions")
    d.add_argument("--store", type=Path, default=Path(".store/demo"))
    d.set_defaults(run=_demo)
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tenant", default="default")
    p.add_argument("--store", required=True, type=Path)


def _llm_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--llm-url",
        default=None,
        help="OpenAI-compatible server, e.g. http://host:8000/v1 (env AMEM_LLM_URL)",
    )
    p.add_argument("--llm-model", default=None, help="model name (env AMEM_LLM_MODEL)")
    p.add_argument(
        "--llm-max-in-flight", type=int, default=None, help="requests in flight (env AMEM_LLM_MAX_IN_FLIGHT)"
    )
    p.add_argument(
        "--llm-timeout",
        type=float,
        default=None,
        help="seconds per request, scaled by in-flight over server slots (env AMEM_LLM_TIMEOUT_S)",
    )
    p.add_argument(
        "--llm-dialect",
        default=None,
        choices=["auto", "json_schema", "json_object", "none"],
        help="response_format form the server takes (env AMEM_LLM_DIALECT; default auto-detect)",
    )
    p.add_argument("--encoder", default=None, choices=["wordllama", "minilm", "api"])


def _ingest_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, nargs="+")
    _common(p)
    p.add_argument("--format", default="auto", choices=["auto", "jsonl", "locomo"])
    p.add_argument("--on-error", default="fail", choices=["fail", "skip"])
    p.add_argument("--rejects", type=Path, default=None, help="where skipped lines go (JSONL)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--ray", action="store_true", help="ingest with Ray shard actors")
    p.add_argument("--shards", type=int, default=2)
    p.add_argument("--no-wal", action="store_true", help="no write-ahead log (faster, loses work on a crash)")
    p.add_argument(
        "--max-fallback-rate",
        type=float,
        default=0.5,
        help="exit 3 when more than this share of LLM items fell back to the embedded annotator",
    )
    _llm_flags(p)
    p.set_defaults(run=_ingest)


def _config(args: argparse.Namespace, **extra: Any) -> Config:
    return Config.from_env(
        llm_url=getattr(args, "llm_url", None),
        llm_model=getattr(args, "llm_model", None),
        llm_max_in_flight=getattr(args, "llm_max_in_flight", None),
        llm_timeout_s=getattr(args, "llm_timeout", None),
        llm_dialect=getattr(args, "llm_dialect", None),
        encoder=getattr(args, "encoder", None),
        **extra,
    )


def _ingest(args: argparse.Namespace) -> int:
    from engine.io.ingest import ingest_files

    config = _config(args, wal=not args.no_wal)
    if args.ray:
        run_ingest = ray_runner("ingest")
        if args.rejects is not None:
            raise InputError(
                "--rejects is not supported with --ray (rejected lines are counted in the report)",
                field="rejects",
            )
        report = run_ingest(
            [str(f) for f in args.file],
            store=str(args.store),
            default_tenant=args.tenant,
            config=config,
            num_shards=args.shards,
            fmt=args.format,
            on_error=args.on_error,
            max_batch=args.batch_size,
        )
    else:
        report = ingest_files(
            args.file,
            store=args.store,
            tenant=args.tenant,
            config=config,
            fmt=args.format,
            on_error=args.on_error,
            rejects=args.rejects,
            batch_size=args.batch_size,
        )
    print(json.dumps(report, indent=1))
    skipped = report.get("skipped_duplicate_ids", 0)
    print(f"amem: {report['records']} records ingested, {skipped} duplicate ids skipped", file=sys.stderr)
    from engine.io.ingest import fallback_problem

    if problem := fallback_problem(report, args.max_fallback_rate):
        print(f"amem: error: {problem}", file=sys.stderr)
        return 3
    return 0


def _open(args: argparse.Namespace):
    from engine.memory import Memory

    return Memory(args.store, Config.from_env(read_only=True))


def _search(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        hits = mem.search(
            args.query,
            tenant=args.tenant,
            k=args.k,
            as_of=args.as_of,
            include_superseded=args.include_superseded,
            expand_links=not args.no_expand,
        )
    if args.json:
        print(json.dumps([_hit_json(h) for h in hits], indent=1, default=str))
        return 0
    for rank, h in enumerate(hits, 1):
        flag = " [superseded]" if h.is_superseded else ""
        via = f"\n      via {h.via}" if h.via else ""
        print(
            f"{rank:2d}. {h.score:.3f} {h.note.timestamp:%Y-%m-%d} {h.note.speaker or '-'}: "
            f"{h.note.content[:200]}{flag}  [{h.note.id}]{via}"
        )
    return 0


def _hit_json(h: Any) -> dict[str, Any]:
    return {
        "id": h.note.id,
        "score": h.score,
        "content": h.note.content,
        "speaker": h.note.speaker,
        "timestamp": h.note.timestamp.isoformat(),
        "keywords": h.note.keywords,
        "tags": h.note.tags,
        "context": h.note.context,
        "via": h.via,
        "superseded": h.is_superseded,
        "metadata": h.note.metadata,
    }


def _show(args: argparse.Namespace) -> int:
    from engine.model.records import note_to_record, version_to_record

    with _open(args) as mem:
        out: dict[str, Any] = {"note": note_to_record(mem.get(args.id, tenant=args.tenant))}
        if args.history:
            out["history"] = [
                version_to_record(v) | {"embedding": None} for v in mem.history(args.id, args.tenant)
            ]
    print(json.dumps(out, indent=1, default=str))
    return 0


def _stats(args: argparse.Namespace) -> int:
    from engine.io.ingest import read_cost
    from engine.memory import Memory

    with Memory(args.store, Config.of(read_only=True)) as mem:
        stats = mem.stats()
    stats["cost"] = read_cost(args.store, stats["notes"])
    print(json.dumps(stats, indent=1, default=str))
    return 0


def _reannotate(args: argparse.Namespace) -> int:
    from engine.memory import Memory

    with Memory(args.store, _config(args)) as mem:
        redone = mem.reannotate(tenant=args.tenant)
    print(json.dumps({"reannotated": redone}))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from engine.service.run import serve

    serve(
        store=args.store,
        keys=args.keys,
        host=args.host,
        port=args.port,
        use_ray=args.ray,
        replicas=args.replicas,
        workers=args.workers,
    )
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from engine.service.mcp_stdio import serve_stdio

    serve_stdio(args.store, args.tenant, _config(args))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from engine.io.ingest import ingest_files
    from engine.memory import Memory

    sample = Path(__file__).resolve().parent.parent / "data" / "sample_chat.jsonl"
    report = ingest_files([sample], store=args.store, tenant="demo", config=Config())
    print(json.dumps(report, indent=1))
    questions = [
        "Where does Maya live now?",
        "What pet did Maya adopt?",
        "When is the dentist appointment?",
        "What does Leo do for work?",
    ]
    with Memory(args.store, Config.of(read_only=True)) as mem:
        for q in questions:
            print(f"\nQ: {q}")
            for h in mem.search(q, tenant="demo", k=3):
                print(f"   {h.score:.3f} {h.note.timestamp:%Y-%m-%d} {h.note.speaker}: {h.note.content}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
