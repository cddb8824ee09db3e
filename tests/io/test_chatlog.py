"""engine/chatlog.py + engine/chatparse.py: JSONL and LoCoMo in, records or named errors out."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import InputError, StoreError
from engine.io.chatlog import (
    LOCOMO_TURN_SECONDS,
    ChatRecord,
    count_records,
    parse_locomo_time,
    read_chatlog,
    validate_chatlog,
)

LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo-dev.json"
PROPERTY = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _jsonl(path: Path, *lines: Any) -> Path:
    """Write lines: dicts as JSON, str as text, bytes as-is."""
    out = []
    for line in lines:
        out.append(
            line
            if isinstance(line, bytes)
            else (line if isinstance(line, str) else json.dumps(line)).encode()
        )
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def _one_error(path: Path) -> InputError:
    errors = validate_chatlog(path)
    assert len(errors) == 1, errors
    return errors[0]


GOOD = {"content": "I moved to Lisbon", "timestamp": "2024-05-01T14:30:00Z"}


# --- JSONL: the happy path ---------------------------------------------------------------
def test_a_full_line_becomes_an_interaction(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "chat.jsonl", {**GOOD, "speaker": "ana", "tenant": "t1", "metadata": {"k": [1]}})
    [record] = list(read_chatlog(path))
    assert isinstance(record, ChatRecord) and record.tenant == "t1" and record.where == f"{path}:1"
    it = record.interaction
    assert (it.content, it.speaker, it.metadata) == ("I moved to Lisbon", "ana", {"k": [1]})
    assert it.timestamp == datetime(2024, 5, 1, 14, 30, tzinfo=UTC)
    assert it.source_id is not None and it.source_id.startswith("chat.jsonl:1:")


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2024-05-01T14:30:00+02:00", datetime(2024, 5, 1, 12, 30, tzinfo=UTC)),
        ("2024-05-01T14:30:00", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),  # no offset: UTC
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        (1714573800, datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        (1714573800.5, datetime(2024, 5, 1, 14, 30, 0, 500000, tzinfo=UTC)),
    ],
)
def test_timestamps_iso_or_epoch_seconds(tmp_path: Path, stamp: Any, expected: datetime) -> None:
    [record] = list(read_chatlog(_jsonl(tmp_path / "c.jsonl", {**GOOD, "timestamp": stamp})))
    assert record.interaction.timestamp == expected


def test_blank_lines_bom_and_crlf_are_fine_and_line_numbers_stay_true(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\r\n\r\n   \n\t\n" + b"{oops}\r\n")
    reader = read_chatlog(path, on_error="skip")
    assert [r.where for r in reader] == [f"{path}:1"]
    assert reader.num_rejected == 1 and reader.errors[0].where == f"{path}:5"
    assert count_records(path) == 2


def test_huge_content_is_kept_whole_unless_a_limit_is_set(tmp_path: Path) -> None:
    big = "word " * 400_000
    path = _jsonl(tmp_path / "c.jsonl", {**GOOD, "content": big})
    assert next(read_chatlog(path)).interaction.content == big
    with pytest.raises(InputError, match="max_content_chars=1000") as info:
        list(read_chatlog(path, max_content_chars=1000))
    assert info.value.field == "content"


def test_speaker_empty_means_none_and_ids_are_the_callers(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", {**GOOD, "speaker": "", "id": "msg-1"}, {**GOOD, "id": 42})
    first, second = read_chatlog(path)
    assert first.interaction.speaker is None and first.interaction.source_id == "msg-1"
    assert second.interaction.source_id == "int:42"  # not "42": 42 and "42" are two ids


def test_source_ids_are_stable_and_tell_lines_apart(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", GOOD, GOOD, {**GOOD, "speaker": "bo"})
    ids = [r.interaction.source_id for r in read_chatlog(path)]
    assert len(set(ids)) == 3
    assert ids == [r.interaction.source_id for r in read_chatlog(path)]
    (tmp_path / "elsewhere").mkdir()
    moved = _jsonl(tmp_path / "elsewhere" / "c.jsonl", GOOD)
    assert next(read_chatlog(moved)).interaction.source_id == ids[0]  # same name, line and record


# --- JSONL: every kind of bad line names file:line and the field ----------------------------
@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("{not json", None, "invalid JSON"),
        ('["a", "list"]', None, "JSON object"),
        ('"just a string"', None, "JSON object"),
        ({"timestamp": 1}, "content", "required"),
        ({"content": "   ", "timestamp": 1}, "content", "empty"),
        ({"content": 5, "timestamp": 1}, "content", "a number"),
        ({"content": None, "timestamp": 1}, "content", "required"),
        ({"content": "x"}, "timestamp", "required"),
        ({"content": "x", "timestamp": "yesterday"}, "timestamp", "ISO-8601"),
        ({"content": "x", "timestamp": True}, "timestamp", "a boolean"),
        ({"content": "x", "timestamp": [2024]}, "timestamp", "an array"),
        ({"content": "x", "timestamp": 1714573800000}, "timestamp", "out of range"),  # milliseconds
        ({"content": "x", "timestamp": "2" * 100}, "timestamp", "not a timestamp"),
        ({**GOOD, "speaker": 7}, "speaker", "a number"),
        ({**GOOD, "tenant": "../etc"}, "tenant", "tenant name"),
        ({**GOOD, "tenant": 3}, "tenant", "must be a string"),
        ({**GOOD, "metadata": ["a"]}, "metadata", "an object"),
        ({**GOOD, "id": True}, "id", "a boolean"),
        ({**GOOD, "id": ""}, "id", "non-empty"),
        ({**GOOD, "user": "ana"}, "user", "under 'metadata'"),
        ('{"content": "a", "content": "b", "timestamp": 1}', "content", "duplicate key"),
        ('{"content": "a", "timestamp": NaN}', None, "NaN is not valid JSON"),
        ('{"content": "a", "timestamp": 1, "metadata": {"x": Infinity}}', None, "Infinity"),
        ('{"content": "bad \\ud800 half", "timestamp": 1}', "content", "surrogate"),
        ('{"content": "a", "timestamp": 1, "metadata": {"k": "\\udc00"}}', "metadata", "surrogate"),
        ('{"content": "a", "timestamp": 1, "metadata": {"n": ' + "9" * 5000 + "}}", None, "invalid JSON"),
        ("[" * 100_000 + "]" * 100_000, None, "invalid JSON"),
        (b'{"content": "caf\xe9", "timestamp": 1}', None, "not valid UTF-8"),
    ],
)
def test_bad_lines_are_named(tmp_path: Path, line: Any, field: str | None, message: str) -> None:
    path = _jsonl(tmp_path / "c.jsonl", GOOD, line, GOOD)
    error = _one_error(path)
    assert error.where == f"{path}:2" and error.field == field
    assert str(error).startswith(f"{path}:2: ") and message in str(error)
    if field:
        assert f"(field '{field}')" in str(error)


def test_a_deeply_nested_but_valid_metadata_is_kept(tmp_path: Path) -> None:
    nested: Any = "leaf"
    for _ in range(200):
        nested = {"k": nested}
    [record] = list(read_chatlog(_jsonl(tmp_path / "c.jsonl", {**GOOD, "metadata": nested})))
    assert record.interaction.metadata == nested


# --- fail / skip / rejects / validate -------------------------------------------------------
def test_fail_mode_raises_at_the_first_bad_line(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", GOOD, {"content": "x"}, GOOD)
    reader = read_chatlog(path)
    assert next(reader).where == f"{path}:1"
    with pytest.raises(InputError, match=":2: "):
        next(reader)
    assert list(reader) == []  # closed


def test_skip_mode_writes_rejects_and_keeps_going(tmp_path: Path) -> None:
    binary = b'{"content": "\xff\xfe", "timestamp": 1}'
    path = _jsonl(tmp_path / "c.jsonl", GOOD, "{broken", binary, {**GOOD, "extra": 1}, GOOD)
    rejects = tmp_path / "rejects.jsonl"
    with read_chatlog(path, on_error="skip", rejects=rejects) as reader:
        assert [r.where for r in reader] == [f"{path}:1", f"{path}:5"]
    assert (reader.num_records, reader.num_rejected) == (2, 3)
    entries = [json.loads(line) for line in rejects.read_text().splitlines()]
    assert [(e["file"], e["line"]) for e in entries] == [(str(path), 2), (str(path), 3), (str(path), 4)]
    assert entries[0]["raw"] == "{broken" and "invalid JSON" in entries[0]["error"]
    assert base64.b64decode(entries[1]["raw_base64"]) == binary
    assert entries[2]["field"] == "extra"
    with read_chatlog(path, on_error="skip", rejects=rejects) as again:  # appends, never truncates
        list(again)
    assert len(rejects.read_text().splitlines()) == 6


def test_validate_reports_every_error_then_a_clean_file_reports_none(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", *([{"content": "x"}] * 5), GOOD)
    errors = validate_chatlog(path)
    assert [e.where for e in errors] == [f"{path}:{n}" for n in range(1, 6)]
    assert len(validate_chatlog(path, max_errors=2)) == 2
    assert validate_chatlog(_jsonl(tmp_path / "ok.jsonl", GOOD, GOOD)) == []


def test_bad_arguments_and_unreadable_files(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", GOOD)
    with pytest.raises(InputError, match="no such file") as info:
        read_chatlog(tmp_path / "missing.jsonl")
    assert info.value.where == str(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="not a regular file"):
        validate_chatlog(tmp_path)
    with pytest.raises(InputError) as info:
        read_chatlog(path, fmt="csv")  # type: ignore[arg-type]
    assert info.value.field == "fmt"
    with pytest.raises(InputError) as info:
        read_chatlog(path, on_error="ignore")  # type: ignore[arg-type]
    assert info.value.field == "on_error"
    with pytest.raises(InputError, match="rejects file cannot be the chat log"):
        read_chatlog(path, on_error="skip", rejects=path)


def test_an_unwritable_rejects_file_is_a_store_error(tmp_path: Path) -> None:
    path = _jsonl(tmp_path / "c.jsonl", "{bad")
    with pytest.raises(StoreError, match="rejects file"):
        list(read_chatlog(path, on_error="skip", rejects=tmp_path / "no-dir" / "r.jsonl"))


# --- LoCoMo ------------------------------------------------------------------------------------
def test_the_locomo_dev_set_reads_clean() -> None:
    records = list(read_chatlog(LOCOMO))
    assert len(records) == count_records(LOCOMO) == 2760 and validate_chatlog(LOCOMO) == []
    assert {r.tenant for r in records} == {"conv-26", "conv-30", "conv-41", "conv-42", "conv-43"}
    first = records[0].interaction
    assert (first.speaker, first.content) == ("Caroline", "Hey Mel! Good to see you! How have you been?")
    assert first.timestamp == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.metadata == {"dia_id": "D1:1", "session": 1}
    assert records[1].interaction.timestamp - first.timestamp == timedelta(seconds=LOCOMO_TURN_SECONDS)
    photo = next(r.interaction for r in records if r.interaction.metadata["dia_id"] == "D1:5")
    assert photo.content.endswith(
        " [shares a photo: a photo of a dog walking past a wall with a painting of a woman]"
    )
    assert len({r.interaction.source_id for r in records}) == 2760
    for tenant in {r.tenant for r in records}:
        stamps = [r.interaction.timestamp for r in records if r.tenant == tenant]
        assert stamps == sorted(stamps)  # sessions in number order, turns in order


def _locomo(path: Path, conversation: dict[str, Any], sample_id: Any = "s-1") -> Path:
    path.write_text(json.dumps([{"sample_id": sample_id, "conversation": conversation, "qa": []}]))
    return path


def test_locomo_bad_turns_and_sessions_are_named(tmp_path: Path) -> None:
    conversation = {
        "speaker_a": "A",
        "speaker_b": "B",
        "session_1_date_time": "9:00 am on 1 January, 2023",
        "session_1": [
            {"speaker": "A", "dia_id": "D1:1", "text": "hi"},
            {"speaker": "B", "dia_id": "D1:2"},
            {"speaker": "B", "dia_id": "D1:3", "text": "", "blip_caption": "a cat"},
            {"speaker": "B", "dia_id": "D1:4", "text": "  "},
        ],
        "session_2_date_time": "sometime",
        "session_2": [{"speaker": "A", "dia_id": "D2:1", "text": "lost with its session"}],
    }
    path = _locomo(tmp_path / "l.json", conversation)
    errors = validate_chatlog(path)
    assert [(e.where, e.field) for e in errors] == [
        (f"{path}:s-1:D1:2", "text"),
        (f"{path}:s-1:D1:4", "text"),
        (f"{path}:s-1:session_2", "session_2_date_time"),
    ]
    reader = read_chatlog(path, on_error="skip")
    assert [r.interaction.content for r in reader] == ["hi", "[shares a photo: a cat]"]
    assert reader.num_rejected == 3 and count_records(path) == 5


def test_locomo_sample_problems(tmp_path: Path) -> None:
    path = _locomo(tmp_path / "l.json", {}, sample_id="bad/id")
    [error] = validate_chatlog(path)
    assert error.field == "sample_id" and error.where == f"{path}:sample 0"
    (tmp_path / "broken.json").write_text('[{"sample_id": "x",\n  oops}]')
    with pytest.raises(InputError, match="invalid JSON") as info:
        validate_chatlog(tmp_path / "broken.json")
    assert info.value.where == f"{tmp_path / 'broken.json'}:2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9, tzinfo=UTC)),
        ("12:30 pm on 1 Jan, 2024", datetime(2024, 1, 1, 12, 30, tzinfo=UTC)),
        ("3:04 pm on 2 Sept, 2022", datetime(2022, 9, 2, 15, 4, tzinfo=UTC)),
        ("  7:05 AM on 29 February, 2024 ", datetime(2024, 2, 29, 7, 5, tzinfo=UTC)),
    ],
)
def test_locomo_times(text: str, expected: datetime) -> None:
    assert parse_locomo_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "13:00 pm on 1 May, 2023",
        "1:00 pm on 30 February, 2023",
        "1:00 pm on 1 Mai, 2023",
        "1:00 pm on 1 Mayonnaise, 2023",
        "2023-05-01",
        "",
        None,
    ],
)
def test_bad_locomo_times(text: Any) -> None:
    with pytest.raises(InputError) as info:
        parse_locomo_time(text, where="f:s", field="session_1_date_time")
    assert info.value.field == "session_1_date_time"


def test_format_detection_is_by_content(tmp_path: Path) -> None:
    locomo_named_jsonl = tmp_path / "x.jsonl"
    locomo_named_jsonl.write_bytes(b"\xef\xbb\xbf \n" + LOCOMO.read_bytes())
    assert count_records(locomo_named_jsonl) == 2760
    jsonl_named_json = _jsonl(tmp_path / "y.json", GOOD)
    assert count_records(jsonl_named_json) == 1
    assert count_records(_jsonl(tmp_path / "empty.jsonl", "")) == 0


# --- properties ----------------------------------------------------------------------------
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_KEYS = st.sampled_from(["content", "timestamp", "speaker", "tenant", "metadata", "id", "extra"])
_JSONISH_LINES = st.dictionaries(_KEYS, _JSON, max_size=6).map(lambda d: json.dumps(d).encode())
_LINES = st.lists(
    st.one_of(st.binary(max_size=80), _JSONISH_LINES, st.just(json.dumps(GOOD).encode())), max_size=12
)


@PROPERTY
@given(_LINES)
def test_any_bytes_give_records_or_input_errors_only(tmp_path: Path, lines: list[bytes]) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines))
    reader = read_chatlog(path, fmt="jsonl", on_error="skip")
    records = list(reader)  # skip mode never raises for a bad line
    assert reader.num_records == len(records)
    assert reader.num_records + reader.num_rejected == count_records(path, "jsonl")
    assert all(e.where and e.where.startswith(f"{path}:") for e in reader.errors)
    try:
        assert len(list(read_chatlog(path, fmt="jsonl"))) == len(records)
    except InputError as exc:  # the only thing fail mode may raise
        assert reader.num_rejected and exc.where == reader.errors[0].where
    try:  # auto-detection may pick LoCoMo (a leading '['): still nothing but InputError
        list(read_chatlog(path, on_error="skip"))
    except InputError as exc:
        assert path.read_bytes().lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and "fmt='jsonl'" in str(exc)


_OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
_MOMENTS = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=_OFFSETS)
_TEXT = st.text(min_size=1, max_size=40).filter(str.strip)
_TENANTS = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,15}", fullmatch=True)


@st.composite
def _valid_record(draw: st.DrawFn) -> dict[str, Any]:
    moment = draw(_MOMENTS)
    stamp = draw(st.sampled_from(["iso", "epoch"]))
    record: dict[str, Any] = {
        "content": draw(_TEXT),
        "timestamp": int(moment.timestamp()) if stamp == "epoch" else moment.isoformat(),
    }
    for key, strategy in (
        ("speaker", _TEXT),
        ("tenant", _TENANTS),
        ("id", _TEXT),
        ("metadata", st.dictionaries(st.text(max_size=8), _JSON, max_size=4)),
    ):
        if draw(st.booleans()):
            record[key] = draw(strategy)
    return record


@PROPERTY
@given(st.lists(_valid_record(), min_size=1, max_size=8), st.booleans())
def test_valid_records_round_trip_exactly(
    tmp_path: Path, records: list[dict[str, Any]], ascii_only: bool
) -> None:
    path = tmp_path / "valid.jsonl"
    path.write_text("\n\n".join(json.dumps(r, ensure_ascii=ascii_only) for r in records), encoding="utf-8")
    back = list(read_chatlog(path))
    assert len(back) == len(records)
    for record, got in zip(records, back, strict=True):
        it = got.interaction
        stamp = record["timestamp"]
        expected = (
            datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, int) else datetime.fromisoformat(stamp)
        )
        assert it.content == record["content"] and it.timestamp == expected and it.timestamp.tzinfo == UTC
        assert it.speaker == record.get("speaker") and got.tenant == record.get("tenant")
        assert it.metadata == record.get("metadata", {})
        if "id" in record:
            assert it.source_id == record["id"]


_BREAKS = st.sampled_from(
    [
        ("content", None),
        ("content", 3),
        ("content", " "),
        ("content", ["x"]),
        ("timestamp", None),
        ("timestamp", "soon"),
        ("timestamp", False),
        ("timestamp", {"y": 1}),
        ("timestamp", 1e300),
        ("speaker", 1),
        ("speaker", ["a"]),
        ("tenant", "a/b"),
        ("tenant", ".."),
        ("tenant", 5),
        ("metadata", "m"),
        ("metadata", [1]),
        ("id", False),
        ("id", 1.5),
        ("id", ""),
    ]
)


@PROPERTY
@given(st.lists(_valid_record(), min_size=1, max_size=6), st.data())
def test_errors_name_file_line_and_the_faulty_field(
    tmp_path: Path, records: list[dict[str, Any]], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(records) - 1))
    broken = dict(records[index])
    if data.draw(st.booleans()):
        field, value = data.draw(_BREAKS)
        broken[field] = value
        if value is None:
            del broken[field]
    else:
        field = data.draw(
            st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,10}", fullmatch=True).filter(
                lambda k: k not in {"content", "timestamp", "speaker", "tenant", "metadata", "id"}
            )
        )
        broken[field] = data.draw(_JSON)
    records[index] = broken
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    error = _one_error(path)
    assert error.where == f"{path}:{index + 1}" and error.field == field
    assert str(error).startswith(f"{path}:{index + 1}: ") and f"(field '{field}')" in str(error)
