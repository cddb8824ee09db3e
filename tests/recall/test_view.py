"""Session neighbours: the per-view table and the per-query path (big tenants) give the same rows."""

import numpy as np
import pytest

from engine.recall import view as view_module
from engine.recall.view import TenantView


def _view(n: int, seed: int) -> TenantView:
    rng = np.random.default_rng(seed)
    live = np.flatnonzero(rng.random(n) > 0.2)  # some slots hold no note
    times = np.cumsum(rng.exponential(300, len(live)))  # gaps around the 600 s bar
    order = rng.permutation(live)
    position = np.full(n, -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    zeros = np.zeros(n)
    return TenantView(
        (),
        times,
        order,
        position,
        zeros.astype(np.int64),
        zeros,
        zeros > 0,
        zeros.astype(np.int16),
        zeros > 0,
    )


@pytest.mark.parametrize("window", [1, 2, 3])
def test_table_and_per_query_paths_agree(monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    slots = np.concatenate([np.arange(-2, 205), np.random.default_rng(1).integers(0, 200, 50)])
    tabled = _view(200, window).neighbours(slots, 600.0, window)
    monkeypatch.setattr(view_module, "TABLE_MAX", 10)
    direct = _view(200, window).neighbours(slots, 600.0, window)
    assert np.array_equal(tabled, direct)
    assert (tabled[:2] == -1).all() and (tabled[-55:-50] == -1).all()  # before 0 and past the tenant
    assert (tabled >= 0).sum() > 50  # the data has neighbours to find
