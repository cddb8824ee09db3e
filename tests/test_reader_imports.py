"""A process that only reads a store never imports torch.

torch comes in with the fact pair judge (and MiniLM), which only writes use. In a reader it cost 1.2 s of
start-up and ~60 ms on every full pass of the garbage collector, a pause that lands inside a search.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WRITE = """
import sys
from engine import Memory
with Memory(sys.argv[1]) as mem:
    mem.add_many([
        {"content": "I drive a 2015 Camry", "timestamp": "2024-01-01T10:00:00+00:00", "speaker": "Kim"},
        {"content": "these days I take the train, I sold the car", "timestamp": "2024-06-01T10:00:00+00:00",
         "speaker": "Kim"},
    ], tenant="t")
"""

READ = """
import sys
from engine import Memory
with Memory(sys.argv[1]) as mem:
    hits = mem.search("How does Kim get around?", tenant="t", k=5)
    print(len(hits), "torch" in sys.modules)
"""


def _run(code: str, store: Path) -> str:
    done = subprocess.run([sys.executable, "-c", code, str(store)], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_search_after_reopening_does_not_import_torch(tmp_path: Path) -> None:
    _run(WRITE, tmp_path / "store")
    hits, torch_loaded = _run(READ, tmp_path / "store").split()
    assert int(hits) >= 1
    assert torch_loaded == "False"
