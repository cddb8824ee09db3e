"""engine/tenant.py: the name rule, and that a tenant's directory never leaves the store root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InputError, TenantError
from engine.model.tenant_name import MAX_TENANT_CHARS, tenant_dir, validate_tenant

RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@pytest.mark.parametrize(
    "name", ["a", "conv-26", "Alice", "user_42", "team.alpha-1", "9", "a" * MAX_TENANT_CHARS]
)
def test_valid_names_are_returned_unchanged(name: str) -> None:
    assert validate_tenant(name) == name


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "empty"),
        (".", "start with"),
        ("..", "'..'"),
        ("a..b", "'..'"),
        ("-rf", "start with"),
        ("_x", "start with"),
        (".hidden", "start with"),
        ("a/b", "'/'"),
        ("a\\b", "'\\\\'"),
        ("a b", "' '"),
        ("caf\u00e9", "'é'"),
        ("a\x00b", "'\\x00'"),
        ("a" * (MAX_TENANT_CHARS + 1), "129 characters"),
    ],
)
def test_invalid_names_say_why(name: str, why: str) -> None:
    with pytest.raises(TenantError, match="invalid tenant name") as info:
        validate_tenant(name)
    assert why in str(info.value)
    assert info.value.field == "tenant"


@pytest.mark.parametrize("value", [None, 42, b"abc", ["a"]])
def test_non_strings_are_rejected(value: object) -> None:
    with pytest.raises(TenantError, match="must be a string"):
        validate_tenant(value)  # type: ignore[arg-type]


def test_errors_carry_the_callers_position_and_field() -> None:
    with pytest.raises(TenantError) as info:
        validate_tenant("../etc", where="log.jsonl:7", field="sample_id")
    assert isinstance(info.value, InputError)
    assert (info.value.where, info.value.field) == ("log.jsonl:7", "sample_id")
    assert str(info.value).startswith("log.jsonl:7: ")


def test_long_bad_names_are_shortened_in_the_message() -> None:
    with pytest.raises(TenantError) as info:
        validate_tenant("/" * 10_000)
    assert len(str(info.value)) < 300


def test_tenant_dir_is_a_direct_child_of_the_resolved_root(tmp_path: Path) -> None:
    assert tenant_dir(tmp_path, "alice") == tmp_path.resolve() / "alice"
    assert not (tmp_path / "alice").exists()  # it only names the directory


def test_tenant_dir_follows_a_symlinked_root(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert tenant_dir(tmp_path / "link", "bob") == (tmp_path / "real" / "bob").resolve()


def test_tenant_dir_refuses_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    (root / "mallory").symlink_to(outside)
    with pytest.raises(TenantError, match="symlink"):
        tenant_dir(root, "mallory")


def test_tenant_dir_refuses_a_symlink_to_another_tenant(tmp_path: Path) -> None:
    (tmp_path / "alice").mkdir()
    (tmp_path / "eve").symlink_to(tmp_path / "alice")
    with pytest.raises(TenantError, match="symlink"):
        tenant_dir(tmp_path, "eve")


def test_tenant_dir_refuses_a_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(TenantError):
        tenant_dir(tmp_path, "loop")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("store")


_NAMEISH = st.text(alphabet=st.sampled_from("aZ09_.-/\\ \x00é~"), max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=140), _NAMEISH))
def test_any_string_is_rejected_or_stays_inside_the_root(root: Path, name: str) -> None:
    try:
        folder = tenant_dir(root, name)
    except TenantError:
        assert not RULE.fullmatch(name) or ".." in name
        return
    assert RULE.fullmatch(name) and ".." not in name
    assert folder.parent == root.resolve()
    assert folder.name == name
