"""Tenant names and where a tenant lives on disk.

The rule: 1 to 128 characters from ASCII letters, digits, '_', '.' and '-'; the first is a letter or
digit (so no hidden names, no '.', no leading '-' that a shell would read as an option); and no '..'
anywhere. Names are case-sensitive, so on a case-insensitive file system 'Alice' and 'alice' would
share a directory: keep names lower-case there.

Each tenant owns one directory directly under the store root. `tenant_dir` checks the name and then,
as defence in depth, that the directory really is that child of the root: a symlink placed there
could alias another tenant's data or lead outside the store, so it is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.errors import TenantError

MAX_TENANT_CHARS = 128
_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
_SHOWN = 60  # how much of a bad name an error message repeats


def validate_tenant(name: str, *, where: str | None = None, field: str = "tenant") -> str:
    """Return `name` unchanged if it is a valid tenant name, else raise TenantError saying why.

    `where` and `field` only label the error (a chat log passes its file:line).
    """
    if not isinstance(name, str):
        raise TenantError(
            f"tenant name must be a string, got {type(name).__name__}", where=where, field=field
        )
    if not _TENANT.fullmatch(name) or ".." in name:
        raise TenantError(f"invalid tenant name {_shown(name)}: {_why(name)}", where=where, field=field)
    return name


def tenant_dir(root: Path, name: str) -> Path:
    """The directory of tenant `name` under store `root` (not created here)."""
    validate_tenant(name)
    try:
        base = Path(root).resolve()
        folder = base / name
        resolved = folder.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise TenantError(f"cannot resolve the directory of tenant {name!r} under {root}: {exc}") from exc
    if resolved != folder:
        raise TenantError(
            f"tenant directory {folder} resolves to {resolved}; a tenant directory must be a real "
            "directory directly under the store root, not a symlink",
            field="tenant",
        )
    return folder


def _why(name: str) -> str:
    if not name:
        return "it is empty"
    if len(name) > MAX_TENANT_CHARS:
        return f"it has {len(name)} characters, the limit is {MAX_TENANT_CHARS}"
    if ".." in name:
        return "it contains '..'"
    if not name[0].isascii() or not name[0].isalnum():
        return "it must start with an ASCII letter or digit"
    bad = next(ch for ch in name if not (ch.isascii() and (ch.isalnum() or ch in "_.-")))
    return f"character {bad!r} is not allowed (use A-Z a-z 0-9 _ . -)"


def _shown(name: str) -> str:
    return repr(name) if len(name) <= _SHOWN else repr(name[:_SHOWN]) + "…"
