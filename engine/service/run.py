"""`amem serve`: the recall app under uvicorn on this machine (one process, or a writer and readers:
--workers), or under Ray Serve replicas (--ray)."""

from __future__ import annotations

import ipaddress
import sys
from pathlib import Path

from engine.errors import ConfigError
from engine.service.app import create_app


def serve(
    store: Path,
    keys: Path | None,
    host: str = "127.0.0.1",
    port: int = 8420,
    use_ray: bool = False,
    replicas: int = 2,
    workers: int = 1,
) -> None:
    """Serve until interrupted. Without a keys file there is no authentication, so only on loopback."""
    if workers < 1:
        raise ConfigError(f"--workers must be at least 1, got {workers}")
    if workers > 1 and use_ray:
        raise ConfigError("--workers is for one machine; with --ray, use --replicas")
    if workers > 1 and not sys.platform.startswith("linux"):
        raise ConfigError("--workers needs Linux: SO_REUSEPORT spreads connections over the processes")
    if keys is None and not is_loopback(host):
        raise ConfigError(
            f"without --keys the service has no authentication; refusing to listen on {host} "
            "(use 127.0.0.1 or give a keys file)"
        )
    if use_ray:
        from engine.extensions import ray_runner

        run_ray = ray_runner("serve")

        run_ray(Path(store), keys, host=host, port=port, replicas=replicas)
        return
    if workers > 1:
        from engine.service.workers import serve_workers

        serve_workers(Path(store), keys, host, port, workers)
        return
    import uvicorn

    # access_log off: at thousands of requests a second the log line costs more than the search.
    uvicorn.run(create_app(Path(store), keys), host=host, port=port, log_level="warning", access_log=False)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
