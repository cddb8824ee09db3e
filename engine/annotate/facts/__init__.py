"""Fact validity: does a new statement retire the fact an older one stated?"""

from engine.annotate.facts.rules import Fact, extract_facts, supersedes

__all__ = ["Fact", "extract_facts", "supersedes"]
