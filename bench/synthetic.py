"""Synthetic multi-tenant chat data for the service and Ray benches: logs, stores, queries.

Sentences are drawn from small vocabularies ("Maya repaired a rusty bicycle in Lisbon last week"), so
queries over them hit real matches in both the dense and the BM25 half of recall, and two random
sentences are rarely near-duplicates (which the pipeline would merge).
"""

from __future__ import annotations

import json
import multiprocessing
import random
import shutil
import time
from pathlib import Path
from typing import Any

NAMES = (
    "Maya Leo Ana Omar Lena Yuki Ravi Sofia Tomas Ines Kofi Mei Jonas Priya Diego Hana Ivan Zara Noah "
    "Elif Marco Aisha Felix Nora Sami Lucia Ben Chloe Amir Greta"
).split()
VERBS = (
    "visited repaired bought painted cooked booked sold found lost borrowed planted studied photographed "
    "cleaned ordered returned designed tested packed shared"
).split()
ADJECTIVES = (
    "rusty tiny antique bright noisy fragile heavy vintage spicy quiet wooden electric "
    "handmade broken shiny ancient cozy tall"
).split()
OBJECTS = (
    "bicycle guitar table lamp garden recipe ticket camera kayak novel painting sofa laptop violin "
    "tent map teapot jacket clock telescope quilt drone piano scooter kite mirror rug bookshelf "
    "aquarium hammock"
).split()
PLACES = (
    "Lisbon Denver Kyoto Nairobi Oslo Lima Cairo Berlin Austin Hanoi Porto Quebec Seoul Dublin "
    "Tbilisi Perth Bogota Krakow Accra Reno"
).split()
WHEN = (
    "yesterday",
    "last week",
    "this morning",
    "on Sunday",
    "in May",
    "after work",
    "before dinner",
    "over the holidays",
)
STORE_MARKER = "bench-built.json"


def sentence(rng: random.Random) -> tuple[str, str]:
    """(speaker, content)."""
    speaker = rng.choice(NAMES)
    text = (
        f"{speaker} {rng.choice(VERBS)} a {rng.choice(ADJECTIVES)} {rng.choice(OBJECTS)} in "
        f"{rng.choice(PLACES)} {rng.choice(WHEN)} with {rng.choice(NAMES)}"
    )
    return speaker, text


def chat(n: int, seed: int = 0, tenants: int = 0) -> list[dict[str, Any]]:
    """`n` interactions in time order, each with a source id; with `tenants`, each also names one of that
    many tenants ("tenant-0000", ...), round robin."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        speaker, text = sentence(rng)
        item: dict[str, Any] = {
            "content": text,
            "speaker": speaker,
            "timestamp": 1_700_000_000 + i * 420,
            "source_id": f"synth:{seed}:{i}",
        }
        if tenants:
            item["tenant"] = f"tenant-{i % tenants:04d}"
        out.append(item)
    return out


def queries(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    shapes = [
        lambda: f"who {rng.choice(VERBS)} the {rng.choice(OBJECTS)}",
        lambda: f"{rng.choice(ADJECTIVES)} {rng.choice(OBJECTS)} in {rng.choice(PLACES)}",
        lambda: f"what did {rng.choice(NAMES)} do in {rng.choice(PLACES)}",
    ]
    return [rng.choice(shapes)() for _ in range(n)]


def interactions(tenant: str, n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(f"{tenant}:{seed}")
    out = []
    for i in range(n):
        speaker, text = sentence(rng)
        out.append(
            {
                "content": text,
                "speaker": speaker,
                "timestamp": 1_700_000_000 + i * 90,
                "source_id": f"{tenant}:{i}",
            }
        )
    return out


def write_log(path: Path, records: int, tenants: int, seed: int = 0) -> Path:
    """A JSONL chat log, tenants interleaved line by line as a shared log would be."""
    rng = random.Random(seed)
    names = [f"tenant{t:04d}" for t in range(tenants)]
    with open(path, "w") as f:
        for i in range(records):
            speaker, text = sentence(rng)
            f.write(
                json.dumps(
                    {
                        "content": text,
                        "speaker": speaker,
                        "timestamp": 1_700_000_000 + i * 30,
                        "tenant": rng.choice(names),
                    }
                )
                + "\n"
            )
    return path


def build_store(
    path: Path, notes: int, tenants: int, rebuild: bool = False, procs: int = 2
) -> dict[str, Any]:
    """A store of `notes` interactions over `tenants` tenants, built once and reused (marker file)."""
    marker = path / STORE_MARKER
    if marker.exists() and not rebuild:
        built: dict[str, Any] = json.loads(marker.read_text())
        if built["requested"] == notes and len(built["tenants"]) == tenants:
            return {**built, "path": path, "cached": True}
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    names = [f"tenant{t:04d}" for t in range(tenants)]
    jobs = [
        (str(path), name, notes // tenants + (1 if i < notes % tenants else 0))
        for i, name in enumerate(names)
    ]
    started = time.perf_counter()
    print(f"building a {notes:,}-note store in {path} ({procs} processes; cached for later runs)", flush=True)
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        counts = dict(pool.imap_unordered(_build_tenant, jobs))
    built = {
        "requested": notes,
        "notes": sum(counts.values()),
        "tenants": names,
        "build_s": round(time.perf_counter() - started, 1),
    }
    marker.write_text(json.dumps(built))
    return {**built, "path": path, "cached": False}


def _build_tenant(job: tuple[str, str, int]) -> tuple[str, int]:
    from engine import Config, Memory

    store, tenant, n = job
    items = interactions(tenant, n)
    # One process per tenant: each holds its tenant's lock; the store-level lock would keep all but one out.
    with Memory(Path(store), Config.of(store_lock=False)) as mem:
        for i in range(0, n, 500):
            mem.add_many(items[i : i + 500], tenant=tenant)
        count = len(mem.notes(tenant))
    print(f"  {tenant}: {count:,} notes", flush=True)
    return tenant, count
