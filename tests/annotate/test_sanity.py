"""Semantic guards on stage answers, and the evolve decision's guard that keeps a neighbour's subject."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.annotate import sanity
from engine.annotate.schemas import NeighbourUpdate
from engine.errors import LLMRejected
from engine.llm import answers
from engine.model.note import Note, new_id
from engine.write.evolution import apply_update

T0 = datetime(2024, 2, 20, 12, tzinfo=UTC)
MAYA = "I'm Maya, 34, I work as a nurse at Mount Sinai in New York"


def note(content: str, **fields: Any) -> Note:
    fields.setdefault("timestamp", T0)
    return Note(id=new_id(), tenant="t", content=content, speaker="maya", **fields)


@pytest.mark.parametrize(
    ("context", "problem"),
    [
        ("2024-02-20T12:00:00+00:00", "timestamp_context"),
        ("2024-13-31T99:00:00Z", "timestamp_context"),  # not even a real date
        ("On 2024-02-20", "timestamp_context"),
        ("nurse", "not_a_sentence"),
        (MAYA, "copied_context"),
        (MAYA.lower() + ".", "copied_context"),
        ("Maya introduces herself as a nurse in New York.", None),
        ("On 20 February 2024 Maya says she is a nurse.", None),
    ],
)
def test_context_must_be_a_sentence_about_the_text(context: str, problem: str | None) -> None:
    assert sanity.context_problem(context, MAYA) == problem


def test_keywords_are_drawn_from_or_near_the_text() -> None:
    got = sanity.ground_keywords(["Maya", "nurses", "Mount Sinai", "Sinaii", "rainier", "hiking"], MAYA)
    assert got == ["Maya", "nurses", "Mount Sinai", "Sinaii"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ('{"keywords": [], "tags": ["work"], "context": "Maya is a nurse."}', "empty_keywords"),
        ('{"keywords": ["rainier"], "tags": ["work"], "context": "Maya is a nurse."}', "ungrounded_keywords"),
        ('{"keywords": ["Maya"], "tags": ["2024"], "context": "Maya is a nurse."}', "empty_tags"),
        (
            '{"keywords": ["Maya"], "tags": ["work"], "context": "2024-02-20T12:00:00+00:00"}',
            "timestamp_context",
        ),
    ],
)
def test_note_answers_are_rejected_by_reason(raw: str, reason: str) -> None:
    with pytest.raises(LLMRejected) as caught:
        answers.parse_annotation(raw, max_keywords=12, max_tags=5, content=MAYA)
    assert caught.value.reason == reason


def test_a_good_note_answer_keeps_only_grounded_keywords() -> None:
    raw = '{"keywords": ["Maya", "hospital", "nurse"], "tags": ["work"], "context": "Maya works as a nurse."}'
    got = answers.parse_annotation(raw, max_keywords=12, max_tags=5, content=MAYA)
    assert got.keywords == ["Maya", "nurse"]


def _maya() -> Note:
    return note(
        MAYA,
        keywords=["Maya", "nurse", "Mount Sinai"],
        tags=["work"],
        context="Maya is a nurse at Mount Sinai.",
    )


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        ({"keywords": ["rainier", "mount", "seattle", "hiking"]}, "off_subject_keywords"),
        ({"context": "2024-02-20T12:00:00+00:00"}, "timestamp_context"),
        ({"context": "Leo hiked a volcano near Seattle last weekend."}, "off_subject_context"),
        ({"keywords": ["Maya", "nurse", "Mount Sinai", "Seattle"]}, None),
        ({"context": "Maya is a nurse at Mount Sinai; Leo told her about his hike."}, None),
    ],
)
def test_off_subject(update: dict[str, Any], reason: str | None) -> None:
    assert sanity.off_subject(_maya(), NeighbourUpdate(target="x", **update)) == reason


def test_the_evolve_decision_never_overwrites_a_neighbour_with_another_subject() -> None:
    """The observed failure: Maya's note rewritten with a hike's keywords and a timestamp context."""
    maya, hike = _maya(), note("We hiked Mount Rainier near Seattle", timestamp=T0 + timedelta(days=1))
    bad = NeighbourUpdate(
        target=maya.id,
        keywords=["rainier", "mount", "seattle", "hiking"],
        context="2024-02-20T12:00:00+00:00",
    )
    after, stage = apply_update(maya, bad, hike, T0)
    assert stage is None and (after.keywords, after.context) == (maya.keywords, maya.context)
    good = NeighbourUpdate(target=maya.id, keywords=[*maya.keywords, "Seattle"])
    after, stage = apply_update(maya, good, hike, T0)
    assert stage == "evolve" and after.keywords[-1] == "Seattle"
