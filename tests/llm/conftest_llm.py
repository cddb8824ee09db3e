"""pytest plugin for the LLM tests: `pytest_plugins = ["conftest_llm"]` gives the `llm_server` fixture."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import StandIn


@pytest.fixture(scope="session")
def _stand_in() -> Iterator[StandIn]:
    server = StandIn(timeout_sleep_s=2.0).start()
    yield server
    server.stop()


@pytest.fixture
def llm_server(_stand_in: StandIn) -> StandIn:
    """The session's stand-in server, with its log, faults and latency reset for this test."""
    _stand_in.state.reset()
    _stand_in.state.latency_s = 0.0
    _stand_in.state.dialect = "json_schema"
    _stand_in.state.slots = None
    return _stand_in
