"""Recall: hybrid dense + lexical search, validity masks, graph expansion."""

from engine.recall.search import Recipe, search

__all__ = ["Recipe", "search"]
