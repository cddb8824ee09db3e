"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(encoder, monkeypatch) -> None:
    import engine.memory

    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    real = engine.memory.make_encoder
    monkeypatch.setattr(
        engine.memory,
        "make_encoder",
        lambda config, cost=None: encoder if config.encoder.kind == "wordllama" else real(config, cost),
    )
    scope: dict[str, object] = {}
    exec(compile(block.group(1), str(README), "exec"), scope)  # noqa: S102 - our own README
    hits = scope["hits"]
    assert "Seattle" in hits[0].note.content  # type: ignore[index]
