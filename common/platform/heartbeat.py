"""Liveness of workers and beat, written to Redis and read by /healthz."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from common.platform.redis import redis_client

WORKER_KEY_PREFIX = "synthorg:heartbeat:worker:"
BEAT_KEY = "synthorg:heartbeat:beat"

_stop = threading.Event()
_thread: threading.Thread | None = None


@dataclass(frozen=True)
class Heartbeat:
    name: str
    age_seconds: float
    queues: tuple[str, ...]


# Each worker's sandbox probe reports, read by /healthz and the worker's refusals.
SANDBOX_PROBE_PREFIX = "synthorg:sandbox-probe:"


def _ttl() -> int:
    return max(int(settings.SYNTHORG_HEARTBEAT_MAX_AGE * 3), 5)


def write_worker_heartbeat(*, hostname: str, queues: list[str]) -> None:
    payload = json.dumps({"ts": time.time(), "queues": queues, "pid": os.getpid()})
    redis_client().set(WORKER_KEY_PREFIX + hostname, payload, ex=_ttl())


def start_worker_heartbeat(*, hostname: str, queues: list[str]) -> None:
    """Write this worker's heartbeat every interval from a daemon thread."""
    global _thread
    _stop.clear()

    def beat() -> None:
        while not _stop.is_set():
            # A Redis hiccup must not kill the worker; /healthz shows the gap.
            with contextlib.suppress(Exception):
                write_worker_heartbeat(hostname=hostname, queues=queues)
            _stop.wait(settings.SYNTHORG_HEARTBEAT_INTERVAL)
        with contextlib.suppress(Exception):
            redis_client().delete(WORKER_KEY_PREFIX + hostname)

    _thread = threading.Thread(target=beat, name="synthorg-heartbeat", daemon=True)
    _thread.start()


def stop_worker_heartbeat() -> None:
    _stop.set()
    if _thread is not None:
        _thread.join(timeout=2)


def write_beat_heartbeat() -> None:
    redis_client().set(BEAT_KEY, json.dumps({"ts": time.time()}), ex=_ttl())


def worker_heartbeats() -> list[Heartbeat]:
    """Every worker that wrote a heartbeat recently, youngest first."""
    client = redis_client()
    now = time.time()
    beats: list[Heartbeat] = []
    for key in client.scan_iter(match=WORKER_KEY_PREFIX + "*", count=100):
        raw = client.get(key)
        if raw is None:
            continue
        data = json.loads(raw)
        name = key.decode() if isinstance(key, bytes) else str(key)
        beats.append(
            Heartbeat(
                name=name[len(WORKER_KEY_PREFIX) :],
                age_seconds=max(now - float(data["ts"]), 0.0),
                queues=tuple(data.get("queues", ())),
            )
        )
    return sorted(beats, key=lambda b: b.age_seconds)


def beat_heartbeat_age() -> float | None:
    raw = redis_client().get(BEAT_KEY)
    if raw is None:
        return None
    return max(time.time() - float(json.loads(raw)["ts"]), 0.0)
