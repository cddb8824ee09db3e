"""Synthetic chat interactions: varied, repeatable, with recurring people, places and facts."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

PEOPLE = ["Alice", "Bob", "Chen", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivan", "Jade"]
PLACES = ["Seattle", "Lisbon", "Osaka", "Denver", "Nairobi", "Austin", "Prague", "Lima", "Oslo", "Perth"]
THINGS = ["guitar", "sourdough", "marathon", "kayak", "novel", "garden", "podcast", "telescope", "pottery",
          "chess", "violin", "bicycle", "camera", "recipe", "puzzle", "startup", "painting", "yoga", "tent"]
TEMPLATES = [
    "I spent the weekend working on my {thing} in {place}.",
    "{person} told me about a {thing} class near {place}.",
    "Do you still have that {thing} you bought last {month}?",
    "We are planning a trip to {place} in {month} to try {thing}.",
    "My {thing} project is finally done after {n} weeks!",
    "I met {person} at the {thing} meetup yesterday.",
    "Honestly the {thing} in {place} was better than I expected.",
    "I'm thinking of selling my old {thing} for about {n}0 dollars.",
    "{person} moved to {place} and started a {thing} club.",
    "Remind me to call {person} about the {thing} on {month} {n}.",
]
MONTHS = ["January", "March", "May", "July", "September", "November"]


def interactions(n: int, seed: int = 0, tenants: int = 1) -> list[dict[str, Any]]:
    """`n` interactions spread over `tenants` tenants, timestamps increasing."""
    rng = random.Random(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    out = []
    for i in range(n):
        text = rng.choice(TEMPLATES).format(person=rng.choice(PEOPLE), place=rng.choice(PLACES),
                                            thing=rng.choice(THINGS), month=rng.choice(MONTHS), n=rng.randint(2, 9))
        out.append({"content": text, "speaker": rng.choice(PEOPLE[:4]), "tenant": f"tenant-{i % tenants:04d}",
                    "timestamp": (start + timedelta(minutes=7 * i)).isoformat(), "source_id": f"synth:{seed}:{i}"})
    return out
