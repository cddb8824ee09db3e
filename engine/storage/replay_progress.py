"""Progress of a long log replay, as log lines: how far, how fast, how long left.

A tenant opened after a crash replays every log record since its last snapshot, and on a big tenant
that is minutes (`python -m bench.replay`: ~850 notes a second at 60k notes, slower at 1M), during which the
tenant answers nothing. The opener (a service, a CLI, an agent's process) should be able to tell a
long replay from a hang. This is a library running inside other programs, so it reports through the
`amem` logger, not a terminal bar, at WARNING (shown with no logging set up: the tenant is not serving);
nothing is said for a replay shorter than `EVERY_S`.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("amem")
EVERY_S = 10.0
"""Seconds between progress lines (and the shortest replay that gets any)."""


class ReplayProgress:
    def __init__(self, tenant: str, total: int) -> None:
        self.tenant, self.total, self.done = tenant, max(total, 0), 0
        self._start = self._last = time.monotonic()

    def step(self) -> None:
        self.done += 1
        now = time.monotonic()
        if now - self._last >= EVERY_S and self.done < self.total:
            self._last = now
            rate = self.done / (now - self._start)
            log.warning(
                "tenant %s: replaying the log past its snapshot: %d / %d records, "
                "%.1f records/s, about %s left",
                self.tenant, self.done, self.total, rate, _span((self.total - self.done) / rate),
            )  # fmt: skip

    def finish(self) -> None:
        took = time.monotonic() - self._start
        if self.done and took >= EVERY_S:
            log.warning("tenant %s: replayed %d log records in %s", self.tenant, self.done, _span(took))


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
