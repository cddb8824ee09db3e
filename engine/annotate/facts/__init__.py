"""Fact validity: does a new statement retire the fact an older one stated? See facts.decision."""

from engine.annotate.facts.decision import Decision, Statement, confirm, decide, is_fixed, masked, similarity
from engine.annotate.facts.rules import Fact, extract_facts, supersedes

__all__ = [
    "Decision",
    "Fact",
    "Statement",
    "confirm",
    "decide",
    "extract_facts",
    "is_fixed",
    "masked",
    "similarity",
    "supersedes",
]
