"""Many tenants on one store: only max_open_tenants stay resident; the rest reopen from disk on use."""

from __future__ import annotations

import threading

from engine import Config, Memory


def test_idle_tenants_are_closed_and_reopen_with_their_notes(store, encoder) -> None:
    with Memory(store, Config.of(max_open_tenants=2), encoder=encoder) as mem:
        ids = {
            f"t{i}": mem.add(f"tenant {i} keeps a pet iguana named Iggy{i}", tenant=f"t{i}") for i in range(6)
        }
        assert len(mem.resident_tenants()) == 2  # the four least recently used were snapshotted and closed
        for name, nid in ids.items():
            assert mem.get(nid, tenant=name).content.endswith(f"Iggy{name[1:]}")
            assert mem.search("iguana", tenant=name, k=1)[0].note.id == nid
            assert len(mem.resident_tenants()) <= 2
        assert mem.tenants() == sorted(ids)


def test_eviction_never_closes_a_tenant_in_use(store, encoder) -> None:
    with Memory(store, Config.of(max_open_tenants=1), encoder=encoder) as mem:
        errors: list[BaseException] = []

        def work(name: str) -> None:
            try:
                for i in range(15):
                    mem.add(f"{name} note {i} about gardening and tomatoes", tenant=name)
                    mem.search("tomatoes", tenant=name)
            except BaseException as exc:  # collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert all(len(mem.notes(f"w{i}")) == 15 for i in range(3))


def test_a_small_evicted_tenant_keeps_its_log_and_a_larger_one_snapshots(store, encoder) -> None:
    config = Config.of(max_open_tenants=1, evict_snapshot_min=3)
    snapshots = lambda name: list((store / "tenants" / name).glob("snap-*"))  # noqa: E731
    with Memory(store, config, encoder=encoder) as mem:
        bees = mem.add("Ana keeps bees on the roof of her building", tenant="small")
        mem.add_many([{"content": f"Bo sails boat number {i} on the lake"} for i in range(3)], tenant="big")
        assert mem.resident_tenants() == ["big"] and snapshots("small") == []  # 1 note: left in its log
        mem.add("Cy waters the ferns every morning", tenant="other")
        assert len(snapshots("big")) == 1  # 3 notes: snapshotted when evicted
        assert mem.search("bees on the roof", tenant="small", k=1)[0].note.id == bees  # replayed
    with Memory(store, config, encoder=encoder) as mem:
        assert mem.get(bees, tenant="small").content.startswith("Ana keeps bees")
        assert len(mem.notes("big")) == 3 and len(mem.notes("other")) == 1


def test_without_a_log_a_small_evicted_tenant_is_snapshotted(store, encoder) -> None:
    """With wal=False there is no log to replay, so eviction must snapshot even a one-note tenant."""
    config = Config.of(max_open_tenants=1, wal=False)
    with Memory(store, config, encoder=encoder) as mem:
        bees = mem.add("Ana keeps bees on the roof of her building", tenant="small")
        mem.add("Cy waters the ferns every morning", tenant="other")  # evicts "small"
        assert mem.resident_tenants() == ["other"]
        assert mem.search("bees on the roof", tenant="small", k=1)[0].note.id == bees
    with Memory(store, config, encoder=encoder) as mem:
        assert mem.get(bees, tenant="small").content.startswith("Ana keeps bees")
