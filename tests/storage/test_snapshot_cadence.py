"""When a writer snapshots: the bar of notes held since the last snapshot rises with the tenant (so the
cost of snapshots stays flat per note) until `snapshot_held_max`, which bounds what a crash leaves to
replay from the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder
from engine.errors import ConfigError


def _most_held(store: Path, encoder: Encoder, config: Config, notes: int, batch: int = 8) -> tuple[int, int]:
    """(most records a write left unsnapshotted, snapshots written) over `notes` chat lines."""
    lines, most, snapshots = chat(notes, seed=11), 0, 0
    with Memory(store, config, encoder=encoder) as mem:
        for i in range(0, notes, batch):
            mem.add_many(lines[i : i + batch], tenant="t")
            with mem._pool.use("t") as t:
                assert t is not None
                held = t.state.notes.held
            snapshots += held == 0
            most = max(most, held)
    return most, snapshots


def test_past_the_cap_snapshots_come_at_a_steady_cadence(tmp_path: Path, encoder: Encoder) -> None:
    uncapped = Config.of(snapshot_held=8, snapshot_held_max=10**6)
    rising, rising_snaps = _most_held(tmp_path / "a", encoder, uncapped, 400)
    capped, capped_snaps = _most_held(
        tmp_path / "b", encoder, Config.of(snapshot_held=8, snapshot_held_max=40), 400
    )
    assert rising > 120  # the bar doubled past the cap (the test's premise)
    assert capped < 40  # the write that reaches the cap snapshots
    assert capped_snaps > rising_snaps


def test_a_cap_below_the_first_bar_is_refused() -> None:
    with pytest.raises(ConfigError, match="snapshot_held_max"):
        Config.of(snapshot_held=100, snapshot_held_max=50)
