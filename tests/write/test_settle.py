"""A write batch leaves a small tenant's lexical index committed: the next search does not pay for it."""

from __future__ import annotations

import logging

import pytest

import engine.state.tenant_state as tenant_state
from engine import Memory
from engine.state.lexical import LexicalIndex

LINES = ["I repaired the rusty bicycle today", "the cello lesson moved to Friday", "we adopted a kitten"]


def _pending(mem: Memory) -> int:
    with mem._pool.use("default") as t:
        lexical = t.state.lexical
        return len(lexical._adds) + len(lexical._deletes)


def test_a_small_tenants_write_is_searchable_without_a_commit_at_read(encoder) -> None:
    mem = Memory(encoder=encoder)
    mem.add_many([{"content": c} for c in LINES])
    assert _pending(mem) == 0
    assert "bicycle" in mem.search("rusty bicycle", k=1)[0].note.content


def test_a_big_tenant_keeps_gathering_commits(encoder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tenant_state, "SETTLE_MAX", 2)  # 3 notes: "big"
    mem = Memory(encoder=encoder)
    mem.add_many([{"content": c} for c in LINES])
    assert _pending(mem) > 0
    assert "bicycle" in mem.search("rusty bicycle", k=1)[0].note.content  # the read commits
    assert _pending(mem) == 0


def test_a_big_tenant_that_is_searched_commits_with_each_write(
    encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Searches are coming: the write commits (with the tenant's lock released), not the next search."""
    monkeypatch.setattr(tenant_state, "SETTLE_MAX", 2)
    mem = Memory(encoder=encoder)
    mem.add_many([{"content": c} for c in LINES])
    assert "bicycle" in mem.search("rusty bicycle", k=1)[0].note.content
    mem.add_many([{"content": "the tandem bicycle needs a new chain"}])
    assert _pending(mem) == 0
    monkeypatch.setattr(tenant_state, "SEARCHED_S", 0.0)  # nobody searched lately: gathered again
    mem.add_many([{"content": "a walk along the canal"}])
    assert _pending(mem) > 0


def test_a_failed_commit_leaves_the_write_standing(encoder, monkeypatch, caplog) -> None:
    real, failures = LexicalIndex._commit, []

    def full_disk(self: LexicalIndex, *args: object) -> None:
        if not failures:
            failures.append(1)
            raise OSError(28, "No space left on device")
        real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(LexicalIndex, "_commit", full_disk)
    mem = Memory(encoder=encoder)
    with caplog.at_level(logging.WARNING, logger="amem"):
        [note_id] = mem.add_many([{"content": LINES[0]}])
    assert failures and "deferred to the next search" in caplog.text
    assert mem.search("rusty bicycle", k=1)[0].note.id == note_id
