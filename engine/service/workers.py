"""`amem serve --workers N`: one writer process and N - 1 reader processes on the same port.

A search holds the GIL for most of its few milliseconds, so one process answers about one core's worth
of them however many threads it has (docs/service.md). More processes need one writer per tenant
folder (its lock), so:

    port P (SO_REUSEPORT: the kernel spreads connections over the processes)
      worker 0, the writer: the usual app over a writable Memory; also listens on a private loopback
                port for what readers forward
      worker 1..N-1, readers: the app over a read-only Memory that catches up with the writer's log
                before each read (two stat calls when nothing changed), so a write acknowledged to
                any client is seen by every later read on any connection; every other request
                (writes, key admin, MCP sessions) is forwarded to the writer as it came, streamed

The writer restarts a reader that dies; a reader whose writer died stops. Each reader holds the tenants
it serves in its own RAM (the mapped snapshot files are shared through the page cache).
Linux only (SO_REUSEPORT balancing). Ray Serve (`--ray`) spreads over machines, at a proxy hop's cost.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.config import Config
from engine.encode import Encoder
from engine.errors import ConfigError
from engine.memory import Memory
from engine.model.note import Hit, Interaction, Note, NoteVersion
from engine.service.app import create_app
from engine.service.forward import ForwardWrites, WorkerHeader

log = logging.getLogger("amem.service")
_NO_WRITES = "a reader process does not write: ForwardWrites sends writes to the writer"
RESTART_DELAY_S = 1.0
"""Wait before restarting a reader that exited: a reader that fails at start must not spin the CPU."""


class RefreshingReader:
    """The app's Backend in a reader: a read-only Memory that catches up with the writer before a read."""

    def __init__(self, store: Path, encoder: Encoder | None = None) -> None:
        # A reader never annotates, so it needs no LLM client whatever the environment says.
        self.memory = Memory(store, Config.from_env(read_only=True, annotator="embedded"), encoder=encoder)
        self.config = self.memory.config

    def warm(self) -> int:
        """Open the store's tenants (up to `max_open_tenants`): done before a reader joins the port, so
        its first clients do not wait for them (each takes ~0.1 s at 10k notes). Returns how many."""
        names = self.memory.tenants()[: self.config.storage.max_open_tenants]
        for name in names:
            self.memory.refresh(name)
        return len(names)

    def search(
        self,
        query: str,
        tenant: str = "default",
        k: int = 10,
        as_of: Any = None,
        include_superseded: bool = False,
        expand_links: bool | None = None,
    ) -> list[Hit]:
        self.memory.refresh(tenant)
        return self.memory.search(
            query, tenant, k=k, as_of=as_of, include_superseded=include_superseded, expand_links=expand_links
        )

    def search_many(
        self,
        queries: list[str],
        tenant: str = "default",
        k: int = 10,
        as_of: Any = None,
        include_superseded: bool = False,
        expand_links: bool | None = None,
    ) -> list[list[Hit]]:
        self.memory.refresh(tenant)
        return self.memory.search_many(
            queries,
            tenant,
            k=k,
            as_of=as_of,
            include_superseded=include_superseded,
            expand_links=expand_links,
        )

    def get(self, note_id: str, tenant: str = "default") -> Note:
        self.memory.refresh(tenant)
        return self.memory.get(note_id, tenant=tenant)

    def history(self, note_id: str, tenant: str = "default") -> list[NoteVersion]:
        self.memory.refresh(tenant)
        return self.memory.history(note_id, tenant=tenant)

    def page(
        self, tenant: str = "default", after: tuple[Any, str] | None = None, limit: int = 50
    ) -> tuple[list[Note], bool]:
        self.memory.refresh(tenant)
        return self.memory.page(tenant, after=after, limit=limit)

    def add_interactions(self, interactions: list[Interaction], tenant: str = "default") -> list[str]:
        raise RuntimeError(_NO_WRITES)

    def update(self, note_id: str, tenant: str = "default", **fields: Any) -> Note:
        raise RuntimeError(_NO_WRITES)

    def delete(self, note_id: str, tenant: str = "default") -> None:
        raise RuntimeError(_NO_WRITES)

    def close(self) -> None:
        self.memory.close()


def serve_workers(store: Path, keys: Path | None, host: str, port: int, workers: int) -> None:
    """Run the writer here and workers - 1 readers beside it until SIGINT / SIGTERM."""
    import uvicorn

    public = shared_socket(host, port, first=True)
    private = shared_socket("127.0.0.1", 0, reuse_port=False)
    port, writer_port = public.getsockname()[1], private.getsockname()[1]
    readers = Readers(
        [
            _reader_command(store, keys, host, port, f"http://127.0.0.1:{writer_port}", i)
            for i in range(1, workers)
        ]
    )
    app = OnShutdown(WorkerHeader(create_app(store, keys), 0), readers.stop)
    config = uvicorn.Config(app, log_level="warning", access_log=False)
    readers.start()
    try:
        uvicorn.Server(config).run(sockets=[public, private])
    finally:
        readers.stop()


class OnShutdown:
    """Runs `stop` when the server shuts down: uvicorn ends a SIGTERM'd process by re-raising the signal
    after the app's shutdown, so code after `Server.run` never runs then."""

    def __init__(self, app: ASGIApp, stop: Callable[[], None]) -> None:
        self.app, self.stop = app, stop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return

        async def watched() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                await anyio.to_thread.run_sync(self.stop)
            return message

        await self.app(scope, watched, send)


def shared_socket(host: str, port: int, reuse_port: bool = True, first: bool = False) -> socket.socket:
    """A listening socket; with `first`, refused when anything listens on the port already: any other
    process of this user that set SO_REUSEPORT would otherwise share the port (and its traffic)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if first and port:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(False)
    return sock


def _reader_command(
    store: Path, keys: Path | None, host: str, port: int, writer: str, index: int
) -> list[str]:
    cmd = [sys.executable, "-m", "engine.service.workers", "--store", str(store), "--host", host]
    cmd += ["--port", str(port), "--writer", writer, "--index", str(index), "--parent", str(os.getpid())]
    return cmd + (["--keys", str(keys)] if keys is not None else [])


class Readers:
    """The reader processes: started, restarted when one exits, stopped with the writer."""

    def __init__(self, commands: list[list[str]]) -> None:
        self.commands = commands
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * len(commands)
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="amem-readers", daemon=True)

    def start(self) -> None:
        for i in range(len(self.commands)):
            self._spawn(i)
        self._watcher.start()

    def _spawn(self, i: int) -> None:
        self.procs[i] = subprocess.Popen(self.commands[i], stdin=subprocess.DEVNULL)

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            for i, proc in enumerate(self.procs):
                if proc is not None and proc.poll() is not None and not self._stop.is_set():
                    log.warning("reader %d exited with %s; restarting it", i + 1, proc.returncode)
                    time.sleep(RESTART_DELAY_S)
                    if not self._stop.is_set():
                        self._spawn(i)

    def stop(self, grace_s: float = 10.0) -> None:
        self._stop.set()
        live = [p for p in self.procs if p is not None and p.poll() is None]
        for proc in live:
            proc.terminate()
        deadline = time.monotonic() + grace_s
        for proc in live:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _run_reader(args: argparse.Namespace) -> None:
    import uvicorn

    threading.Thread(target=_exit_with_parent, args=(args.parent,), daemon=True).start()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per forwarded write otherwise
    backend = RefreshingReader(args.store)
    backend.warm()  # before binding: until then the writer takes this reader's share
    inner = ForwardWrites(create_app(args.store, args.keys, memory=backend, mcp=False), args.writer)
    config = uvicorn.Config(
        OnShutdown(WorkerHeader(inner, args.index), backend.close), log_level="warning", access_log=False
    )
    uvicorn.Server(config).run(sockets=[shared_socket(args.host, args.port)])


def _exit_with_parent(parent: int) -> None:
    """Stop (gracefully, through uvicorn's SIGTERM handler) once the writer process is gone."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="an amem serve reader process (started by the writer)")
    p.add_argument("--store", required=True, type=Path)
    p.add_argument("--keys", type=Path)
    p.add_argument("--host", required=True)
    p.add_argument("--port", required=True, type=int)
    p.add_argument("--writer", required=True, help="the writer's private URL")
    p.add_argument("--index", required=True, type=int)
    p.add_argument("--parent", required=True, type=int)
    _run_reader(p.parse_args(argv))


if __name__ == "__main__":
    main()
