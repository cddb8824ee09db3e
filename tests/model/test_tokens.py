"""`tokens` lowers and strips possessives in one pass; it must equal the token-by-token definition."""

from __future__ import annotations

import random

from engine.text import _TOKEN, tokens


def reference(text: str) -> list[str]:
    out = []
    for tok in _TOKEN.findall(text):
        tok = tok.lower().replace("’", "'")
        out.append(tok[:-2] if tok.endswith("'s") else tok)
    return out


def test_tokens_equal_the_token_by_token_definition() -> None:
    odd = ["", "  ", "It's Caroline’s dog’s bone's", "x's's DON'T a'S O'Neil's 1990s", "ﬁ K İstanbul 's ’s"]
    rng = random.Random(3)
    alphabet = "aZs9 '’.-\nİK"
    odd += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(2000)]
    for text in odd:
        assert tokens(text) == reference(text), text
