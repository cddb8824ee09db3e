"""Train the fact-update pair judge (engine/annotate/facts/pair_judge.py) and check it on pairs it did not see.

    python -m bench.pair_judge_train                                   # train on every pair file, write the adapters
    python -m bench.pair_judge_train --validate bench/fact_pairs_health.jsonl   # train on the others, score that one
    python -m bench.pair_judge_train --validate-sets ninth tenth                # hold out scenario sets, score them

Pairs: bench/fact_pairs_*.jsonl, statement pairs written blind (from the format alone, never the rules):
{"old", "new", "old_speaker", "new_speaker", "label", "kind", "attribute"}. The judge is MiniLM read as a
cross-encoder with rank-8 adapters on every layer's attention and feed-forward matrices and a logistic head;
everything else is frozen. Seeded: the same files give the same adapters on the same torch build.

Scenario sets (bench/fact_scenarios*.json, SCENARIO_SETS) are pairs too once they have been scored: each was
read first by the version frozen before it, and stays in the report as that version's figure. Sets written
later are not in SCENARIO_SETS, so they still measure the judge.

--validate reports, per threshold, what the decision with the judge finds on the held-out file beyond the
rules alone (supersessions found, true facts wrongly retired, by kind); the threshold is then fixed in
engine/annotate/facts/decision.py (JUDGE) before any blind scenario set is scored.
Results: bench/results/pair_judge[-validate].json.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from tqdm import tqdm

from bench.common import RESULTS, table, write_json
from engine.annotate.facts.decision import Statement, decide, similarity
from engine.annotate.facts.pair_judge import ADAPTERS, PairJudge, adapted, pair_batch, pair_logits
from engine.annotate.facts.sentence import sentence_encoder
from engine.encode import WordLlamaEncoder, minilm

PAIRS = sorted(Path(__file__).parent.glob("fact_pairs_*.jsonl"))
CHAT = Path(__file__).with_name("fact_chat_lines.jsonl")
"""Everyday chat turns that state no lasting fact (written blind, like the pairs): each becomes negatives,
as the old statement of a pair, as the new one, and beside another turn. Without them the judge, trained on
statements of facts alone, retired chit-chat ("Bye Caroline, I'm here for you") in real conversations."""
RANK, SCALE, EPOCHS, BATCH, LR, HEAD_LR, SEED = 8, 2.0, 4, 16, 5e-4, 1e-3, 0
WARMUP = 0.1
"""Share of the steps over which the learning rate rises linearly before it falls linearly to zero: at a
constant 1e-3 the adapters collapsed to one answer once chat negatives were added."""
ADAPTED = (
    "attention.self.query",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)
THRESHOLDS = (0.8, 0.9, 0.95, 0.98, 0.99)
SCENARIO_SETS = (
    "old92",
    "dev",
    "heldout",
    "fresh",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
)
"""The scenario sets already scored (round 19 froze this list before the sixteenth and seventeenth were read)."""


def load_pairs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            row = json.loads(line)
            if {"old", "new", "label"} - row.keys():
                raise ValueError(f"{path}:{line_no}: a pair needs old, new and label")
            rows.append(row)
    return rows


def scenario_pairs(splits: Sequence[str]) -> list[dict[str, Any]]:
    """The scenarios of these sets as statement pairs: a supersession retires, every other kind does not."""
    from bench.facts import scenarios_of

    return [
        {
            "old": s.old,
            "new": s.new,
            "old_speaker": s.speaker,
            "new_speaker": s.speaker_of_new,
            "label": s.kind == "supersede",
            "kind": s.kind,
            "attribute": s.name.split("-")[0],
        }
        for split in splits
        for s in scenarios_of(split)
    ]


def negatives(rows: Sequence[dict[str, Any]], chat: Sequence[str], seed: int = SEED) -> list[dict[str, Any]]:
    """Pairs that retire nothing, made from the written ones: a chat turn as the old or the new statement
    (or both), and one pair's old statement with another attribute's new statement."""
    rng = random.Random(seed)
    out = []
    for line in chat:
        other = rng.choice(rows)
        out.append(_negative(line, other["new"], "chat_old"))
        out.append(_negative(other["old"], line, "chat_new"))
        out.append(_negative(line, rng.choice(chat), "chat_chat"))
    for row in rows:
        other = rng.choice(rows)
        if other["attribute"] != row["attribute"]:
            out.append(_negative(row["old"], other["new"], "crossed"))
    return out


def _negative(old: str, new: str, kind: str) -> dict[str, Any]:
    return {
        "old": old,
        "new": new,
        "old_speaker": "Sam",
        "new_speaker": "Sam",
        "label": False,
        "kind": kind,
        "attribute": kind,
    }


def load_chat(path: Path = CHAT) -> list[str]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not all(isinstance(line, str) for line in lines):
        raise ValueError(f"{path}: every line must be a JSON string")
    return lines


def train(rows: Sequence[dict[str, Any]], epochs: int = EPOCHS) -> dict[str, torch.Tensor]:
    """Adapters and head trained on the pairs (logistic loss); the base weights stay frozen."""
    torch.manual_seed(SEED)
    config, tok, base = minilm.load_shared("cpu")
    adapters = _initial(base, config.layers)
    head = {"head.weight": torch.zeros(1, config.hidden), "head.bias": torch.zeros(1)}
    steps = epochs * -(-len(rows) // BATCH)
    opt, schedule = _optimiser(adapters, head, steps)
    weights, pooled_head = adapted(base, adapters, SCALE), (head["head.weight"], head["head.bias"])
    encoded = [tok.encode(r["old"], r["new"]) for r in rows]
    labels = torch.tensor([float(r["label"]) for r in rows])
    order, rng = list(range(len(rows))), random.Random(SEED)
    with tqdm(total=steps, unit="batch", desc="training", smoothing=0.1) as bar:
        for epoch in range(epochs):
            rng.shuffle(order)
            for at in range(0, len(order), BATCH):
                picked = order[at : at + BATCH]
                batch = pair_batch([encoded[i] for i in picked])
                loss = F.binary_cross_entropy_with_logits(
                    pair_logits(weights, config, pooled_head, *batch), labels[picked]
                )
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_([*adapters.values(), *head.values()], 1.0)
                opt.step()
                schedule.step()
                bar.update()
                bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.3f}")
    return {k: v.detach().clone() for k, v in (adapters | head).items()}


def _optimiser(
    adapters: dict[str, torch.Tensor], head: dict[str, torch.Tensor], steps: int
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    """AdamW over the adapters and the head (each its own rate), warmed up over WARMUP of the steps, then
    falling linearly to zero."""
    for t in [*adapters.values(), *head.values()]:
        t.requires_grad_(True)
    opt = torch.optim.AdamW(
        [{"params": list(adapters.values()), "lr": LR}, {"params": list(head.values()), "lr": HEAD_LR}],
        weight_decay=0.01,
    )
    warm = max(1, int(steps * WARMUP))
    return opt, torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: min((i + 1) / warm, max(0.0, (steps - i) / (steps - warm)))
    )


def _initial(base: Mapping[str, torch.Tensor], layers: int) -> dict[str, torch.Tensor]:
    """A small random A and a zero B per adapted matrix: the adapted model starts as the base one."""
    gen = torch.Generator().manual_seed(SEED)
    out = {}
    for layer in range(layers):
        for part in ADAPTED:
            name = f"encoder.layer.{layer}.{part}.weight"
            rows, cols = base[name].shape
            out[f"{name}.lora_a"] = torch.randn(RANK, cols, generator=gen) * 0.01
            out[f"{name}.lora_b"] = torch.zeros(rows, RANK)
    return out


def save(tensors: dict[str, torch.Tensor], path: Path, sources: Sequence[str]) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"scale": str(SCALE), "rank": str(RANK), "files": ",".join(sources)}
    save_file({k: v.half().contiguous() for k, v in tensors.items()}, str(path), metadata=meta)


# --- validation: the decision with the judge, on pairs the judge did not see -------------------------
def validate(name: str, rows: list[dict[str, Any]], judge: PairJudge, chat: Sequence[str]) -> dict[str, Any]:
    rows = rows + negatives(rows, chat, seed=SEED + 1)
    probs = judge.probabilities([(r["old"], r["new"]) for r in rows])
    enc, sentences = WordLlamaEncoder(), sentence_encoder()
    cases = [
        {
            "kind": r["kind"],
            "label": bool(r["label"]),
            "rules": _decide(enc, sentences, r, None),
            "reached": _decide(enc, sentences, r, 1.0),
            "p": float(p),
        }
        for r, p in zip(rows, probs, strict=True)
    ]
    return {"file": name, "thresholds": [_at(cases, t) for t in THRESHOLDS], "rules": _at(cases, 2.0)}


def _decide(enc: Any, sentences: Any, r: dict[str, Any], judge: float | None) -> bool:
    close = (
        None
        if sentences is None
        else functools.partial(similarity, sentences.encode_batch, r["old"], r["new"])
    )
    d = decide(
        Statement(r["old"], r["old_speaker"]),
        Statement(r["new"], r["new_speaker"]),
        functools.partial(similarity, enc.encode_batch, r["old"], r["new"]),
        close,
        judge,
    )
    return d.supersedes


def _at(cases: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    retired = [c["rules"] or (c["reached"] and c["p"] >= threshold) for c in cases]
    wrong = Counter(c["kind"] for c, r in zip(cases, retired, strict=True) if r and not c["label"])
    found = sum(r and c["label"] for c, r in zip(cases, retired, strict=True))
    return {
        "threshold": threshold,
        "found": found,
        "supersede": sum(c["label"] for c in cases),
        "false": sum(wrong.values()),
        "negatives": sum(not c["label"] for c in cases),
        "false_by_kind": dict(wrong),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--validate", type=Path, help="a pair file to hold out and score")
    ap.add_argument("--validate-sets", nargs="+", default=[], metavar="SET", help="scenario sets to hold out")
    ap.add_argument("--adapters", type=Path, help="with --validate: score this trained file, do not train")
    ap.add_argument("--out", type=Path, default=ADAPTERS)
    ap.add_argument("--epochs", type=int, default=EPOCHS)
    args = ap.parse_args()
    held = args.validate is not None or bool(args.validate_sets)
    files = [p for p in PAIRS if args.validate is None or p.resolve() != args.validate.resolve()]
    sets = [s for s in SCENARIO_SETS if s not in args.validate_sets]
    chat = load_chat()
    held_chat = chat[len(chat) * 4 // 5 :]  # when validating, the last fifth makes negatives for it alone
    if held:
        chat = chat[: len(chat) * 4 // 5]
    if args.adapters is None:
        tensors = train(_training_rows(files, sets, chat), args.epochs)
        if not held:
            save(tensors, args.out, [*(f.name for f in files), *sets])
            print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")
            return
        args.adapters = RESULTS / "pair_judge-validate.safetensors"
        save(tensors, args.adapters, [*(f.name for f in files), *sets])
    if not held:
        ap.error("--adapters needs --validate or --validate-sets")
    _report(args, PairJudge(args.adapters), held_chat)


def _report(args: argparse.Namespace, judge: PairJudge, chat: Sequence[str]) -> None:
    if args.validate is not None:
        name, rows = args.validate.name, load_pairs([args.validate])
    else:
        name, rows = "+".join(args.validate_sets), scenario_pairs(args.validate_sets)
    result = validate(name, rows, judge, chat)
    lines = [result["rules"] | {"threshold": "rules alone"}, *result["thresholds"]]
    print(table(lines, ["threshold", "found", "supersede", "false", "negatives", "false_by_kind"]))
    print(write_json("pair_judge-validate", result | {"adapters": str(args.adapters)}))


def _training_rows(files: Sequence[Path], sets: Sequence[str], chat: Sequence[str]) -> list[dict[str, Any]]:
    written = load_pairs(files) + scenario_pairs(sets)
    names = [f.name for f in files] + [f"scenarios:{s}" for s in sets]
    print(f"training on {len(written)} pairs from {', '.join(names)}, and negatives made")
    return written + negatives(written, chat)


if __name__ == "__main__":
    main()
