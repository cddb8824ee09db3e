"""The public surface: exported names, argument checks with clear errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import engine
from engine import Config, InputError, Memory
from engine.errors import ConfigError, TenantError


def test_exported_names_are_pinned() -> None:
    assert engine.__all__ == sorted(engine.__all__, key=str.lower)
    assert set(engine.__all__) == {
        *("Memory", "Config", "EncoderConfig", "LLMConfig", "WriteConfig", "RecallConfig", "StorageConfig"),
        *("EncoderKind", "AnnotatorKind", "Device", "Stage", "AnnotatedBy", "VersionCause"),
        *("Note", "Link", "NoteVersion", "Hit", "Interaction", "TimeLike"),
        *("AmemError", "ConfigError", "InputError", "TenantError", "NotFound", "StoreError", "StoreLocked"),
        *("ReadOnlyStore", "CorruptStore", "CorruptIndex", "TooLarge"),
        *("LLMError", "LLMRetryable", "LLMTimeout", "LLMFormatRejected", "LLMBadOutput", "LLMTruncated"),
        "LLMRejected",
    }
    assert all(hasattr(engine, name) for name in engine.__all__)


def test_every_public_error_is_exported() -> None:
    import engine.errors

    errors = {n for n, v in vars(engine.errors).items() if isinstance(v, type) and issubclass(v, Exception)}
    assert errors <= set(engine.__all__)


@pytest.mark.parametrize(
    "ts",
    [
        "2024-03-01T10:00:00Z",
        "2024-03-01T10:00:00+00:00",
        1709287200,
        1709287200.0,
        datetime(2024, 3, 1, 10, tzinfo=UTC),
        datetime(2024, 3, 1, 10),
    ],
)
def test_timestamps_accept_iso_epoch_datetime(mem: Memory, ts) -> None:
    nid = mem.add("hello there, general kenobi", tenant="t", timestamp=ts)
    assert mem.get(nid, tenant="t").timestamp == datetime(2024, 3, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    "item, field",
    [
        ({"content": ""}, "content"),
        ({"content": 3}, "content"),
        ({}, "content"),
        ({"content": "x", "timestamp": "yesterday"}, "timestamp"),
        ({"content": "x", "speaker": 5}, "speaker"),
        ({"content": "x", "colour": "red"}, "colour"),
        ({"content": "x", "metadata": []}, "metadata"),
    ],
)
def test_bad_items_name_the_field_and_nothing_is_written(mem: Memory, item, field) -> None:
    with pytest.raises(InputError) as err:
        mem.add_many([{"content": "a good line"}, item], tenant="t")
    assert err.value.field == field and "item 1" in str(err.value)
    assert mem.notes("t") == []


@pytest.mark.parametrize("name", ["../evil", "a/b", "", ".", "..", "x" * 300, "new\nline"])
def test_bad_tenant_names_are_rejected(mem: Memory, name: str) -> None:
    with pytest.raises(TenantError):
        mem.add("hi", tenant=name)


def test_search_arguments_are_checked(mem: Memory) -> None:
    with pytest.raises(InputError):
        mem.search("", tenant="t")
    with pytest.raises(InputError):
        mem.search("q", tenant="t", k=0)


def test_config_is_validated() -> None:
    with pytest.raises(ConfigError):
        Config.of(encoder="nope")
    with pytest.raises(ConfigError):
        Config.of(annotator="llm")  # no URL


def test_config_from_env_and_flags(monkeypatch) -> None:
    monkeypatch.delenv("AMEM_LLM_URL", raising=False)
    assert Config.from_env().llm.annotator == "embedded"
    assert Config.from_env(llm_url="http://127.0.0.1:9/v1").llm.annotator == "llm"
    monkeypatch.setenv("AMEM_LLM_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AMEM_LLM_MODEL", "qwen")
    cfg = Config.from_env()
    assert (cfg.llm.annotator, cfg.llm.url, cfg.llm.model) == ("llm", "http://127.0.0.1:9/v1", "qwen")
