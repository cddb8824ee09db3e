from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from engine import Config, Memory  # noqa: E402
from engine.encode import WordLlamaEncoder  # noqa: E402

SHARED = ROOT.parent / "shared"
LOCOMO = SHARED / "data" / "locomo" / "locomo-dev.json"


@pytest.fixture(scope="session")
def encoder() -> WordLlamaEncoder:
    return WordLlamaEncoder()


@pytest.fixture
def mem(encoder: WordLlamaEncoder):
    m = Memory(config=Config(), encoder=encoder)
    yield m
    m.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"
