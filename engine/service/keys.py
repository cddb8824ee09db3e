"""API keys: each key is bound to one tenant; one admin key adds and removes keys.

The keys file is JSON:

    {"admin_key": "<key>", "keys": {"<key>": "<tenant>", ...}}

Any key may also be written as "sha256:<hex digest of the key>", and the service always writes it so:
once the admin has added or removed a key through the API, the file holds no key in plain text. Keys
are random tokens, so a plain SHA-256 is enough (a slow password hash protects guessable secrets,
which these are not). The file is re-read when it changes, so every process serving the same file
(uvicorn workers, Ray Serve replicas) sees an edit at its next request; edits take an flock on
"<file>.lock" so two admins never overwrite each other's change.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ConfigError, InputError
from engine.model.tenant_name import validate_tenant
from engine.storage.fsutil import atomic_write_bytes

HASHED = "sha256:"
MIN_KEY_CHARS = 16
ID_CHARS = 12
"""A key's id: the first hex digits of its hash (lists and deletes keys without repeating the secret)."""


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _stored_hash(entry: str) -> str:
    return entry[len(HASHED) :] if entry.startswith(HASHED) else key_hash(entry)


@dataclass(slots=True)
class _Keys:
    admin_hash: str | None = None
    tenants: dict[str, str] = field(default_factory=dict)
    """Key hash -> tenant."""

    def to_json(self) -> bytes:
        out: dict[str, Any] = {"keys": {HASHED + h: t for h, t in sorted(self.tenants.items())}}
        if self.admin_hash:
            out["admin_key"] = HASHED + self.admin_hash
        return (json.dumps(out, indent=1) + "\n").encode()


class KeyStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._keys = _Keys()
        self._seen: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self._reload()

    # --- lookups -----------------------------------------------------------------------
    def tenant_for(self, key: str) -> str | None:
        """The tenant a key is bound to, or None for an unknown key."""
        self._reload()
        return self._keys.tenants.get(key_hash(key))

    def is_admin(self, key: str) -> bool:
        self._reload()
        admin = self._keys.admin_hash
        return admin is not None and hmac.compare_digest(admin, key_hash(key))

    def list(self) -> list[dict[str, str]]:
        self._reload()
        return [{"id": h[:ID_CHARS], "tenant": t} for h, t in sorted(self._keys.tenants.items())]

    # --- admin edits ------------------------------------------------------------------
    def add(self, tenant: str, key: str | None = None) -> dict[str, str]:
        """Bind `key` (or a new random one) to `tenant`; returns the key, its id and tenant."""
        validate_tenant(tenant)
        if key is None:
            key = secrets.token_urlsafe(32)
        elif len(key) < MIN_KEY_CHARS:
            raise InputError(f"a key needs at least {MIN_KEY_CHARS} characters", field="key")
        digest = key_hash(key)
        with self._editing() as keys:
            if digest == keys.admin_hash or digest in keys.tenants:
                raise InputError("that key is already in use", field="key")
            keys.tenants[digest] = tenant
        return {"key": key, "id": digest[:ID_CHARS], "tenant": tenant}

    def remove(self, key_id: str) -> bool:
        """Remove the key whose id (or full hash) is `key_id`; False if there is none."""
        if len(key_id) < ID_CHARS:
            raise InputError(f"a key id has at least {ID_CHARS} hex digits", field="key_id")
        with self._editing() as keys:
            found = [h for h in keys.tenants if h.startswith(key_id)]
            for digest in found:
                del keys.tenants[digest]
        return bool(found)

    @contextmanager
    def _editing(self) -> Iterator[_Keys]:
        with open(f"{self.path}.lock", "a") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
            with self._lock:
                keys = _load(self.path)
                yield keys
                atomic_write_bytes(self.path, keys.to_json())
                self._keys, self._seen = keys, _signature(self.path)

    def _reload(self) -> None:
        seen = _signature(self.path)
        if seen == self._seen:
            return
        with self._lock:
            self._keys, self._seen = _load(self.path), seen


def _signature(path: Path) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the API keys file: {exc.strerror or exc}") from exc
    return st.st_mtime_ns, st.st_size


def _load(path: Path) -> _Keys:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the API keys file: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: the API keys file is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("keys", {}), dict):
        raise ConfigError(f'{path}: expected {{"admin_key": "...", "keys": {{"<key>": "<tenant>"}}}}')
    admin = data.get("admin_key")
    if admin is not None and (not isinstance(admin, str) or not admin):
        raise ConfigError(f"{path}: admin_key must be a non-empty string")
    tenants = {}
    for entry, tenant in data.get("keys", {}).items():
        if not isinstance(tenant, str):
            raise ConfigError(f"{path}: the tenant of a key must be a string, got {tenant!r}")
        try:
            tenants[_stored_hash(entry)] = validate_tenant(tenant)
        except InputError as exc:  # the file is the server's config: its fault is a ConfigError (503)
            raise ConfigError(f"{path}: {exc}") from None
    return _Keys(admin_hash=_stored_hash(admin) if admin else None, tenants=tenants)
