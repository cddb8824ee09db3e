"""Snapshots share versions segments: linked, not rewritten; merged past a bound; purged by a rewrite;
a damaged shared segment costs its versions, never the notes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder
from engine.storage import snapshot as snapshot_mod
from engine.storage import versions_files
from tests.storage.damaged import flip, segments

TENANT = "t"
BATCHES = [chat(24, seed=11)[i : i + 8] for i in range(0, 24, 8)]


def _folder(store: Path) -> Path:
    return store / "tenants" / TENANT


def _snaps(store: Path) -> list[Path]:
    return sorted(_folder(store).glob("snap-*"))


def _histories(mem: Memory) -> dict[str, list[tuple[int, str, str]]]:
    return {
        n.id: [(v.version, v.stage, v.note.content) for v in mem.history(n.id, TENANT)]
        for n in mem.notes(TENANT)
    }


def _grow(store: Path, encoder: Encoder, batches: list[list[dict[str, object]]]) -> dict[str, list]:
    """Each batch then a snapshot; the histories as the writer saw them."""
    with Memory(store, Config(), encoder=encoder) as mem:
        for batch in batches:
            mem.add_many(batch, tenant=TENANT)
            mem.checkpoint()
        return _histories(mem)


def test_a_snapshot_links_the_previous_segments_and_writes_only_the_new_versions(
    tmp_path: Path, encoder: Encoder
) -> None:
    store = tmp_path / "store"
    seen = _grow(store, encoder, BATCHES[:2])
    old, new = _snaps(store)
    assert segments(old) and segments(new)[: len(segments(old))] == segments(old)
    for name in segments(old):
        assert (old / name).stat().st_ino == (new / name).stat().st_ino, "rewritten instead of linked"
    assert len(segments(new)) == len(segments(old)) + 1
    seen |= _grow(store, encoder, BATCHES[2:])
    with Memory(store, Config.of(read_only=True), encoder=encoder) as mem:
        assert _histories(mem) == {k: v for k, v in seen.items() if k in _histories(mem)}
        assert sum(len(v) for v in _histories(mem).values()) == mem.stats()["tenants"][TENANT]["versions"]
        assert mem.stats()["tenants"][TENANT]["problems"] == []


def test_past_the_bound_the_smallest_neighbours_merge_and_nothing_is_lost(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(versions_files, "MAX_SEGMENTS", 2)
    merges, real = [], versions_files._merge_smallest

    def counted(*args: object) -> object:
        merges.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(versions_files, "_merge_smallest", counted)
    store = tmp_path / "store"
    seen = _grow(store, encoder, [b[i : i + 2] for b in BATCHES for i in range(0, 8, 2)])
    newest = _snaps(store)[-1]
    assert len(segments(newest)) == 2 and len(merges) >= 2
    assert sorted(p.name for p in newest.glob("versions-*")) == sorted(segments(newest))
    with Memory(store, Config.of(read_only=True), encoder=encoder) as mem:
        assert _histories(mem) == seen and sum(map(len, seen.values())) >= 4


def test_a_hard_delete_rewrites_the_segments_without_the_note(tmp_path: Path, encoder: Encoder) -> None:
    store = tmp_path / "store"
    with Memory(store, Config(), encoder=encoder) as mem:
        gone = mem.add("My passport number is X1234567.", tenant=TENANT)
        mem.update(gone, tenant=TENANT, context="passport")
        mem.checkpoint()
        mem.add_many(BATCHES[0], tenant=TENANT)
        mem.checkpoint()
        mem.delete(gone, tenant=TENANT)
        kept = _histories(mem)
    [snap] = _snaps(store)
    assert len(segments(snap)) == 1
    for path in _folder(store).rglob("*"):
        if path.is_file():
            assert b"X1234567" not in path.read_bytes(), path
    with Memory(store, Config.of(read_only=True), encoder=encoder) as mem:
        assert _histories(mem) == kept


@pytest.mark.parametrize("checked", ["in the background", "at once"])
def test_a_damaged_shared_segment_loses_its_versions_but_not_the_notes(
    tmp_path: Path, encoder: Encoder, checked: str
) -> None:
    store = tmp_path / "store"
    seen = _grow(store, encoder, BATCHES)
    old, new = _snaps(store)
    shared = segments(old)[0]
    assert (old / shared).stat().st_ino == (new / shared).stat().st_ino
    flip(new / shared, 0.9, 2)  # one file: both snapshots see the damage
    if checked == "at once":  # without its state file the snapshot reads its notes and checks first
        (new / "state.arrow").unlink()
    with Memory(store, Config(), encoder=encoder) as mem:
        assert {n.id for n in mem.notes(TENANT)} == set(seen)
        [problem] = mem.stats()["tenants"][TENANT]["problems"]
        assert (
            f"{new.name}/{shared}: checksum mismatch" in problem and "versions of notes are lost" in problem
        )
        after = _histories(mem)
        assert 0 < sum(map(len, after.values())) < sum(map(len, seen.values()))
        assert all(after[k] == v[-len(after[k]) :] for k, v in seen.items() if after[k])  # the newest kept
        mem.add_many(chat(4, seed=99), tenant=TENANT)
    with Memory(store, Config.of(read_only=True), encoder=encoder) as mem:
        assert mem.stats()["tenants"][TENANT]["problems"] == []
        assert set(seen) <= {n.id for n in mem.notes(TENANT)}
    assert shared not in segments(_snaps(store)[-1]), "the damaged segment was linked forward"


def test_a_snapshot_from_before_segments_is_read_and_its_file_linked(
    tmp_path: Path, encoder: Encoder
) -> None:
    store = tmp_path / "store"
    seen = _grow(store, encoder, BATCHES[:2])
    for snap in _snaps(store):  # rewrite both as schema 1 did: one versions.arrow
        _as_schema_1(snap)
    with Memory(store, Config(), encoder=encoder) as mem:
        assert _histories(mem) == seen
        mem.add_many(BATCHES[2], tenant=TENANT)
        mem.checkpoint()
        seen = _histories(mem)
    newest = _snaps(store)[-1]
    assert json.loads((newest / "meta.json").read_text())["schema_version"] == snapshot_mod.SCHEMA_VERSION
    assert len(segments(newest)) == 2 and not (newest / "versions.arrow").exists()
    with Memory(store, Config.of(read_only=True), encoder=encoder) as mem:
        assert _histories(mem) == seen and mem.stats()["tenants"][TENANT]["problems"] == []


def test_without_hard_links_the_segments_are_copied(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(src: object, dst: object) -> None:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)
    store = tmp_path / "store"
    seen = _grow(store, encoder, BATCHES)
    old, new = _snaps(store)
    assert (old / segments(old)[0]).stat().st_ino != (new / segments(old)[0]).stat().st_ino
    with Memory(store, Config.of(read_only=True), encoder=encoder) as mem:
        assert _histories(mem) == seen and mem.stats()["tenants"][TENANT]["problems"] == []


def _as_schema_1(snap: Path) -> None:
    """One versions.arrow holding the segments' rows, and meta.json as schema 1 wrote it."""
    import pyarrow as pa

    from engine.state.history import read_file, write_file
    from engine.storage.checksums import sha256_or_none

    meta = json.loads((snap / "meta.json").read_text())
    meta.pop("meta_sha256")
    names = meta.pop("versions")
    write_file(pa.concat_tables([read_file(snap / n) for n in names]), snap / "versions.arrow")
    for name in names:
        (snap / name).unlink()
        meta["rows"].pop(name), meta["sha256"].pop(name)
    meta["rows"]["versions.arrow"] = pa.ipc.open_file(str(snap / "versions.arrow")).read_all().num_rows
    meta["sha256"]["versions.arrow"] = sha256_or_none(snap / "versions.arrow")
    meta["schema_version"] = 1
    meta["meta_sha256"] = snapshot_mod._meta_digest(meta)
    (snap / "meta.json").write_text(json.dumps(meta))
