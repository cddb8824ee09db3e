"""The pair judge's model (engine/annotate/facts/pair_judge.py): adapters merged as trained, the shipped
file read, batches that do not mix rows, and the negatives its training script makes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.annotate.facts.pair_judge import ADAPTERS, PairJudge, adapted, load_judge, pair_judge
from engine.errors import ConfigError

PAIRS = [
    ("I drive a Honda Civic", "sold the civic last month, it's the bus for me now"),
    ("my manager is Priya", "Priya approved my time off, she's great"),
    ("we rent a flat downtown", "finally closed on the house in Ballard, keys on friday, can't believe it"),
]


@pytest.fixture(scope="module")
def judge() -> PairJudge:
    found = pair_judge()
    if found is None:
        pytest.skip("the MiniLM package is not installed")
    return found


def test_adapted_weights_add_the_low_rank_product_and_leave_the_rest() -> None:
    base = {"a.weight": torch.randn(6, 4), "b.weight": torch.randn(3, 3)}
    ad = {"a.weight.lora_a": torch.randn(2, 4), "a.weight.lora_b": torch.randn(6, 2)}
    merged = dict(adapted(base, ad, 0.5))
    assert torch.allclose(
        merged["a.weight"], base["a.weight"] + 0.5 * ad["a.weight.lora_b"] @ ad["a.weight.lora_a"]
    )
    assert merged["b.weight"] is base["b.weight"] and len(adapted(base, ad, 0.5)) == 2


def test_the_shipped_judge_gives_one_probability_per_pair_whatever_the_batch(judge: PairJudge) -> None:
    together = judge.probabilities(PAIRS)
    alone = np.array([judge.probabilities([p])[0] for p in PAIRS])
    assert together.shape == (3,) and ((together >= 0) & (together <= 1)).all()
    np.testing.assert_allclose(together, alone, atol=1e-5)  # padding to the longest pair changes no row
    np.testing.assert_allclose(judge.probabilities(PAIRS[::-1]), together[::-1], atol=1e-5)
    assert judge.probabilities([]).shape == (0,)


def test_a_file_that_is_not_an_adapter_file_is_refused(tmp_path: Path, judge: PairJudge) -> None:
    from safetensors.torch import save_file

    path = tmp_path / "x.safetensors"
    save_file({"w": torch.zeros(2)}, str(path), metadata={"scale": "2.0"})
    with pytest.raises(ConfigError, match="not a pair-judge adapter file"):
        PairJudge(path)


def test_a_damaged_or_missing_adapter_file_turns_the_judge_off_with_a_warning(
    tmp_path: Path, judge: PairJudge, caplog: pytest.LogCaptureFixture
) -> None:
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(ADAPTERS.read_bytes()[:1000])
    for path in (damaged, tmp_path / "missing.safetensors"):
        caplog.clear()
        assert load_judge(path) is None
        assert f"pair judge off, the rules decide every pair: {path}" in caplog.text
    assert load_judge(ADAPTERS) is not None


def test_the_training_negatives_retire_nothing_and_pair_other_attributes() -> None:
    from bench.pair_judge_train import load_chat, load_pairs, negatives

    rows = load_pairs([Path("bench/fact_pairs_train.jsonl")])[:40]
    chat = load_chat()[:10]
    made = negatives(rows, chat)
    assert made and not any(m["label"] for m in made)
    assert sum(m["kind"].startswith("chat_") for m in made) == 3 * len(chat)
    old_attribute = {r["old"]: r["attribute"] for r in rows}
    new_attribute = {r["new"]: r["attribute"] for r in rows}
    crossed = [m for m in made if m["kind"] == "crossed"]
    assert crossed and all(old_attribute[m["old"]] != new_attribute[m["new"]] for m in crossed)
