"""A long log replay (a crash on a big tenant: minutes) says how far it is, how fast, and how long is left.

A writer logs three batches and takes no snapshot; a reader opening the store replays the three records.
The reporting interval is set to zero so this small replay reports as a long one would.
"""

from __future__ import annotations

import gc
import logging
from pathlib import Path

import pytest

from engine import Config, Memory
from engine.encode import Encoder
from engine.model.changes import ChangeSet
from engine.state.tenant_state import TenantMemory
from engine.storage import replay_progress
from tests.storage.damaged import BATCHES, TENANT


def _replay(tmp_path: Path, encoder: Encoder, caplog: pytest.LogCaptureFixture) -> list[str]:
    writer = Memory(tmp_path / "store", Config.of(snapshot_every=10**9), encoder=encoder)
    try:
        for batch in BATCHES:
            writer.add_many(batch, tenant=TENANT)
        with caplog.at_level(logging.INFO, logger="amem"):
            reader = Memory(tmp_path / "store", Config.of(read_only=True), encoder=encoder)
            assert reader.search(BATCHES[2][0]["content"], tenant=TENANT, k=1)
            reader.close()
    finally:
        writer.close()
    return [r.getMessage() for r in caplog.records if "replay" in r.getMessage()]


def test_a_long_replay_reports_records_rate_and_time_left(
    tmp_path: Path, encoder: Encoder, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(replay_progress, "EVERY_S", 0.0)
    lines = _replay(tmp_path, encoder, caplog)
    assert [line.split(": ")[1] for line in lines[:2]] == ["replaying the log past its snapshot"] * 2
    assert "1 / 3 records" in lines[0] and "2 / 3 records" in lines[1]
    assert all("records/s, about" in line and line.endswith(" s left") for line in lines[:2])
    assert lines[2:] == [lines[2]] and lines[2].startswith(f"tenant {TENANT}: replayed 3 log records in ")


def test_a_short_replay_says_nothing(
    victim: Path, encoder: Encoder, caplog: pytest.LogCaptureFixture
) -> None:
    assert _replay(victim, encoder, caplog) == []


def test_replay_and_refresh_apply_with_the_collector_paused(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each replayed record is a write batch: the cyclic collector is off while it is applied (a quarter
    of a big tenant's replay was collections), and on again after."""
    seen: list[bool] = []
    apply = TenantMemory.apply

    def watched(self: TenantMemory, changes: ChangeSet, index_text: bool = True, prepared=None) -> None:
        seen.append(gc.isenabled())
        apply(self, changes, index_text, prepared)

    writer = Memory(tmp_path / "store", Config.of(snapshot_every=10**9), encoder=encoder)
    try:
        writer.add_many(BATCHES[0], tenant=TENANT)
        reader = Memory(tmp_path / "store", Config.of(read_only=True), encoder=encoder)
        monkeypatch.setattr(TenantMemory, "apply", watched)
        reader.search("anything", tenant=TENANT, k=1)  # opens: replays the first record
        assert seen == [False] and gc.isenabled()
        for batch in BATCHES[1:]:
            writer.add_many(batch, tenant=TENANT)
        seen.clear()  # the writer's own batches (paused by Memory.add_many)
        reader.refresh(TENANT)
        assert seen == [False, False] and gc.isenabled()
        reader.close()
    finally:
        writer.close()
