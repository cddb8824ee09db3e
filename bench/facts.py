"""Fact supersession: does the decision (engine.annotate.facts.decision) and the engine retire what stopped
being true, and nothing else?

    python -m bench.facts --split dev              # develop here: the blind set's dev half
    python -m bench.facts --split heldout          # score once, after the mechanism is frozen
    python -m bench.facts --split nineteenth       # a later blind set (fresh ... twentyseventh): when each
                                                   #   was written and first read, bench.fact_scenarios.LATER
    python -m bench.facts --split old92            # the project's own 92 scenarios (bench/fact_scenarios.py)
    python -m bench.facts --split dev --rules-only # the decision alone, no engine run
    python -m bench.facts --split dev --bulk       # each scenario written in one batch (an import)

Sets: old92 (bench/fact_scenarios.py), the blind set (bench/fact_scenarios_blind.json, dev/heldout), and
the later blind sets (bench/fact_scenarios_<split>.json, `bench.fact_scenarios.LATER`).

Full run, per scenario: a fresh tenant gets filler chit-chat and the old fact (t1), then the new statement
(t2); the scenario's question is asked now and as of the midpoint of t1 and t2.
- now_ok:    the top hit holds a `current` substring (any case: writers typed values in lower case); for
             supersede the old note is absent (k=50).
- as_of_ok:  the top hit is the old note; the new note is absent (it did not exist yet).
- marked_ok: supersede: the old note has invalid_at = t2 and superseded_by = the new note's id;
             other kinds: the old note is still current (nothing wrongly retired).
- false_sup: a non-supersede scenario whose old (true) fact was retired: the worst error, its own column.
Results: bench/results/facts-<split>.json.
"""

from __future__ import annotations

import argparse
import functools
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from bench.common import overrides, table, write_json
from bench.fact_scenarios import (
    KINDS,
    LATER,
    SCENARIOS,
    Scenario,
    fillers_for,
    later_path,
    load_blind,
)
from engine.annotate.facts.decision import Statement, decide, similarity
from engine.annotate.facts.pair_judge import pair_judge
from engine.annotate.facts.sentence import sentence_encoder
from engine.encode import Encoder, WordLlamaEncoder

RETIRING = ("supersede",)


# --- rules alone ----------------------------------------------------------------------
def _retires(
    enc: Encoder, old: str, old_speaker: str, new: str, new_speaker: str, judged: bool
) -> str | None:
    sentences, judge = sentence_encoder(), pair_judge() if judged else None
    close = None if sentences is None else functools.partial(similarity, sentences.encode_batch, old, new)
    d = decide(
        Statement(old, old_speaker),
        Statement(new, new_speaker),
        similarity(enc.encode_batch, old, new),
        close,
        None if judge is None else lambda: float(judge.probabilities([(old, new)])[0]),
    )
    return d.reason if d.supersedes else None


def rules_case(enc: Encoder, s: Scenario, index: int, judged: bool = True) -> dict[str, Any]:
    reason = _retires(enc, s.old, s.speaker, s.new, s.speaker_of_new, judged)
    fillers = fillers_for(index)
    false_hits = [f for f in fillers if _retires(enc, f, s.speaker, s.new, s.speaker_of_new, judged)]
    false_hits += [f for f in fillers if _retires(enc, s.old, s.speaker, f, s.speaker, judged)]
    verdict_ok = (reason is not None) == (s.kind in RETIRING)
    return {
        "name": s.name,
        "kind": s.kind,
        "reason": reason,
        "verdict_ok": verdict_ok,
        "filler_ok": not false_hits,
        "false_hits": false_hits,
        "rules_ok": verdict_ok and not false_hits,
    }


def rules_only(scenarios: Sequence[Scenario], judged: bool = True) -> list[dict[str, Any]]:
    """The decision alone on each scenario (and its fillers); `judged`: with the pair judge (step 5)."""
    enc = WordLlamaEncoder()
    return [rules_case(enc, s, i, judged) for i, s in enumerate(scenarios)]


# --- the whole engine -----------------------------------------------------------------------
def engine_case(mem: Any, s: Scenario, index: int, bulk: bool = False) -> dict[str, Any]:
    """One scenario in its own tenant; `bulk`: the new statement arrives in the same write batch as the rest
    (an imported chat log), not in a later one."""
    tenant = f"facts-{index:03d}"
    t1, t2 = datetime.fromisoformat(s.t1), datetime.fromisoformat(s.t2)
    fillers = fillers_for(index)
    items = [
        {"content": f, "timestamp": (t1 - timedelta(days=len(fillers) - j)).isoformat(), "speaker": s.speaker}
        for j, f in enumerate(fillers)
    ]
    items.append({"content": s.old, "timestamp": s.t1, "speaker": s.speaker})
    later = {"content": s.new, "timestamp": s.t2, "speaker": s.speaker_of_new}
    if bulk:
        new_id = mem.add_many([*items, later], tenant=tenant)[-1]
    else:
        mem.add_many(items, tenant=tenant)
        new_id = mem.add_many([later], tenant=tenant)[0]
    as_of = (t1 + (t2 - t1) / 2).isoformat()
    now, now_all = (mem.search(s.query, tenant=tenant, k=k) for k in (5, 50))
    then, then_all = (mem.search(s.query, tenant=tenant, k=k, as_of=as_of) for k in (5, 50))
    old = next(n for n in mem.notes(tenant) if n.content == s.old)
    return {
        "name": s.name,
        "kind": s.kind,
        "reason": next((v.reason for v in mem.history(old.id, tenant=tenant) if v.stage == "supersede"), None)
        if old.invalid_at
        else None,
        **_judge(s, now, now_all, then, then_all, old, new_id, t2),
        "top_now": [h.note.content for h in now[:3]],
        "top_then": [h.note.content for h in then[:3]],
    }


def _judge(
    s: Scenario,
    now: list[Any],
    now_all: list[Any],
    then: list[Any],
    then_all: list[Any],
    old: Any,
    new_id: str,
    t2: datetime,
) -> dict[str, bool]:
    contents_now = {h.note.content for h in now_all}
    top_now = now[0].note.content if now else ""
    retires = s.kind in RETIRING
    now_ok = any(c.lower() in top_now.lower() for c in s.current) and ((s.old not in contents_now) == retires)
    as_of_ok = bool(then) and s.retired in then[0].note.content and all(h.note.id != new_id for h in then_all)
    if retires:
        marked_ok = old.invalid_at == t2 and old.superseded_by == new_id
    else:
        marked_ok = old.invalid_at is None and s.old in contents_now
    false_sup = not retires and old.invalid_at is not None
    return {"now_ok": now_ok, "as_of_ok": as_of_ok, "marked_ok": marked_ok, "false_sup": false_sup}


def run_engine(
    scenarios: Sequence[Scenario], settings: dict[str, Any] | None = None, bulk: bool = False
) -> list[dict[str, Any]]:
    from engine import Config, Memory

    with Memory(config=Config.of(**(settings or {}))) as mem:
        return [engine_case(mem, s, i, bulk) for i, s in enumerate(scenarios)]


def diagnose(rule: dict[str, Any], row: dict[str, Any]) -> str:
    """Why a full-run case failed: the rule's verdict, the supersession not applied, or ranking."""
    if not rule["verdict_ok"]:
        return "rule verdict"
    if not row["marked_ok"]:
        return (
            "not applied (old note not among the new note's candidates?)"
            if row["kind"] in RETIRING
            else "wrongly retired by the engine"
        )
    return "ranking"


# --- reporting ---------------------------------------------------------------------------------
def summarise(rows: list[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    groups = [(kind, [r for r in rows if r["kind"] == kind]) for kind in KINDS] + [("overall", rows)]
    return [
        {"kind": kind, "n": len(group), **{k: sum(r[k] for r in group) / len(group) for k in keys}}
        for kind, group in groups
        if group
    ]


def scenarios_of(split: str) -> list[Scenario]:
    if split in LATER:
        return load_blind((split,), path=later_path(split))
    return list(SCENARIOS) if split == "old92" else load_blind((split,))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=("dev", "heldout", *LATER, "old92"), default="dev")
    ap.add_argument("--rules-only", action="store_true", help="evaluate the decision alone")
    ap.add_argument("--bulk", action="store_true", help="each scenario's new statement in the same batch")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a Config.of override")
    args = ap.parse_args(argv)
    scenarios = scenarios_of(args.split)
    settings = overrides(args.set)
    rules = rules_only(scenarios, judged=settings.get("fact_judge", True))
    rule_keys = ["verdict_ok", "filler_ok", "rules_ok"]
    payload: dict[str, Any] = {
        "split": args.split,
        "scenarios": len(scenarios),
        "rules": summarise(rules, rule_keys),
        "rule_failures": [r for r in rules if not r["rules_ok"]],
    }
    print("rules alone\n" + table(payload["rules"], ["kind", "n", *rule_keys]))
    _print_failures(payload["rule_failures"], "reason")
    if not args.rules_only:
        payload.update(_full_run(scenarios, rules, settings, args.bulk))
    suffix = "-rules" if args.rules_only else "-bulk" if args.bulk else ""
    path = write_json(f"facts-{args.split}{suffix}", payload)
    print(f"\nwrote {path}")
    return 0


def _full_run(
    scenarios: list[Scenario], rules: list[dict[str, Any]], settings: dict[str, Any], bulk: bool
) -> dict[str, Any]:
    rows = run_engine(scenarios, settings, bulk)
    for rule, row in zip(rules, rows, strict=True):
        row["ok"] = row["now_ok"] and row["as_of_ok"] and row["marked_ok"]
        row["why"] = None if row["ok"] else diagnose(rule, row)
    keys = ["now_ok", "as_of_ok", "marked_ok", "false_sup", "ok"]
    summary = summarise(rows, keys)
    print("\nfull engine (embedded annotator)\n" + table(summary, ["kind", "n", *keys]))
    failures = [r for r in rows if not r["ok"]]
    _print_failures(failures, "why")
    whys = Counter(str(r["why"]) for r in failures)
    print("failures by cause: " + ", ".join(f"{why}: {n}" for why, n in whys.most_common()))
    return {"engine": summary, "engine_failures": failures}


def _print_failures(failures: list[dict[str, Any]], field: str) -> None:
    for f in failures:
        print(
            f"  FAIL {f['kind']:<12} {f['name']:<24} {field}={f[field]!r}"
            + (f" false_hits={f['false_hits']}" if f.get("false_hits") else "")
            + (f" top_now={f['top_now'][:2]} top_then={f['top_then'][:1]}" if "top_now" in f else "")
        )


if __name__ == "__main__":
    raise SystemExit(main())
