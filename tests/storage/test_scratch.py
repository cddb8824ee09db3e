"""A writer's working files live in its tenant's scratch folder, and a dead writer's are cleared.

History spills and the lexical index's working copy used to go to the system's temp folder: a process
killed there left them behind for good, and on a tmpfs /tmp they sat in RAM. The template store was
written by a child that died without closing (tests/storage/conftest.py), so its scratch holds leftovers.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from bench.synthetic import chat
from engine.encode import Encoder
from engine.state import history
from tests.storage.damaged import BATCHES, TENANT, folder, open_store


@pytest.fixture
def system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder standing in for the system's temp folder."""
    temp = tmp_path / "system-temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _entries(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()} if path.is_dir() else set()


def test_a_writer_clears_what_a_dead_writer_left_and_works_under_its_tenant(
    victim: Path, encoder: Encoder, system_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = folder(victim) / "scratch"
    left = _entries(scratch)
    assert any(name.startswith("amem-lexical-") for name in left), left  # the dead child's working copy
    monkeypatch.setattr(history, "SEAL_EVERY", 8)  # the batch below spills versions
    mem = open_store(victim, encoder)
    try:
        assert mem.search(BATCHES[2][0]["content"], tenant=TENANT, k=1)
        mem.add_many(chat(20, seed=11), tenant=TENANT)
        now = _entries(scratch)
        assert not now & left
        assert {name.split("-")[1] for name in now} == {"lexical", "history"}, now
        assert any(mem.history(n.id, tenant=TENANT) for n in mem.notes(TENANT))  # read from the spills
    finally:
        mem.close()
    assert _entries(system_temp) == set()


def test_a_reader_works_in_the_system_temp_and_leaves_the_writers_scratch_alone(
    victim: Path, encoder: Encoder, system_temp: Path
) -> None:
    writer = open_store(victim, encoder)
    try:
        query = BATCHES[2][0]["content"]
        before = writer.search(query, tenant=TENANT, k=3)
        kept = _entries(folder(victim) / "scratch")
        reader = open_store(victim, encoder, read_only=True)
        try:
            assert [h.note.id for h in reader.search(query, tenant=TENANT, k=3)] == [
                h.note.id for h in before
            ]
            assert any(name.startswith("amem-lexical-") for name in _entries(system_temp))
        finally:
            reader.close()
        assert _entries(folder(victim) / "scratch") == kept
        assert [h.note.id for h in writer.search(query, tenant=TENANT, k=3)] == [h.note.id for h in before]
    finally:
        writer.close()
