"""The sentence encoder the supersession decision asks when statements share no word (decision step 3).

all-MiniLM-L6-v2 on CPU, loaded once per process on first use: only pairs that pass every guard, share no
word and carry an explicit change cue reach it, so most ingests never load it. None when the model's
package is missing: the decision then runs without that step (as v4 and earlier).
"""

from __future__ import annotations

import functools

from engine.encode.base import Encoder
from engine.errors import ConfigError

__all__ = ["sentence_encoder"]


@functools.cache
def sentence_encoder() -> Encoder | None:
    from engine.encode.minilm import MiniLMEncoder  # torch is imported only when a pair needs it

    try:
        return MiniLMEncoder(device="cpu")
    except ConfigError:
        return None
