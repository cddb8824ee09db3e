"""Query-side boosts, added to fused scores (a [0, 1] scale, so a boost of 0.1 is a tenth of the range).

- speaker: a query naming a participant favours that participant's turns (`speaker_boost`) and, with
  `speaker_addressed`, by half as much the turns that name them (addressed to them or about them);
- temporal: a "when / how long" question favours turns that say when (`temporal_boost`);
- hedged statements: a hypothetical, negated or other party's statement ('someday I want an EV', 'my
  daughter is learning Mandarin') loses `hedged_penalty`, unless the question asks about plans, what did
  not happen, or that party: a plain question about the speaker wants the asserted fact ("I drive a Camry");
- events: a present-tense question about what holds ('What does Suki do for a living?') takes
  `event_penalty` from questions and narrated events ('Went for a long walk after lunch.'), which state no
  standing fact (the note table's `fixed` column, the guard the fact decision reads);
- short turns: a turn shorter than SHORT_CHARS loses up to `short_turn_penalty` in proportion ("Go, Jon!"
  matches a question naming Jon on the name alone and carries no evidence).
Per-slot facts (speaker, length, time expression, stance, fixed) come precomputed from engine.recall.view.
"""

from __future__ import annotations

import numpy as np

from engine.annotate.facts.stance import asks_about
from engine.config import RecallConfig
from engine.recall.query import QueryInfo, mentions
from engine.recall.view import TenantView
from engine.state.tenant_state import TenantMemory

SHORT_CHARS = 60


def boost(
    tm: TenantMemory,
    view: TenantView,
    slots: np.ndarray,
    scores: np.ndarray,
    query: QueryInfo,
    config: RecallConfig,
) -> np.ndarray:
    add = np.zeros(len(slots))
    if config.speaker_boost and query.speakers:
        named = [i for i, p in enumerate(view.participants) if p in query.speakers]
        by_named = np.isin(view.speaker[slots], named)
        add += config.speaker_boost * by_named
        if config.speaker_addressed:
            notes = (tm.notes[tm.index.ids[int(s)]] for s in slots[~by_named])  # type: ignore[index]
            said = np.fromiter((mentions(n.content, query.speakers) for n in notes), dtype=bool)
            add[~by_named] += config.speaker_boost / 2 * said
    if config.temporal_boost and query.temporal:
        add += config.temporal_boost * view.timely[slots]
    if config.hedged_penalty:
        stance = view.stance[slots]
        asked = np.fromiter(asks_about(query.text), dtype=stance.dtype)
        add -= config.hedged_penalty * ((stance > 0) & ~np.isin(stance, asked))
    if config.event_penalty and query.standing:
        add -= config.event_penalty * (view.fixed[slots] == 1)
    if config.short_turn_penalty:
        add -= config.short_turn_penalty * np.clip(1 - view.chars[slots] / SHORT_CHARS, 0, 1)
    return scores + add
