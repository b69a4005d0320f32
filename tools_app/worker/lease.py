"""A running invocation's lease: proof, renewed while it runs, that its worker is alive.

A redelivered task that finds the invocation `running` checks the lease: a live lease
means another worker has the call in hand; an expired one means that worker died.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from common.platform.redis import redis_client

LEASE_PREFIX = "synthorg:invocation-lease:"


@dataclass(frozen=True)
class LeaseHolder:
    host: str
    pid: int

    def is_this_host(self) -> bool:
        return self.host == socket.gethostname()

    def process_alive(self) -> bool:
        """Only meaningful on this host: does the holding process still exist?"""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def _key(invocation_id: Any) -> str:
    return f"{LEASE_PREFIX}{invocation_id}"


def lease_holder(invocation_id: Any) -> LeaseHolder | None:
    """Who holds the lease now, or None when it expired (or was never taken)."""
    raw = redis_client().get(_key(invocation_id))
    if raw is None:
        return None
    data = json.loads(raw)
    return LeaseHolder(host=str(data["host"]), pid=int(data["pid"]))


def holder_is_alive(invocation_id: Any) -> bool:
    holder = lease_holder(invocation_id)
    if holder is None:
        return False
    if holder.is_this_host():
        return holder.process_alive()
    return True


class _Renewer:
    """One daemon thread per process renews every lease the process holds.

    A thread per call would cost a thread start and join on every call; leases
    are renewed every third of their lifetime, so one thread keeps up with all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}
        self._pid = 0

    def hold(self, key: str, value: str) -> None:
        with self._lock:
            self._held[key] = value
            if self._pid != os.getpid():  # first lease here, or a forked child
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="lease-renewer", daemon=True).start()

    def release(self, key: str) -> None:
        with self._lock:
            self._held.pop(key, None)

    def _run(self) -> None:
        while True:
            ttl = settings.SYNTHORG_INVOCATION_LEASE_SECONDS
            time.sleep(ttl / 3)
            with self._lock:
                held = dict(self._held)
            if not held:
                continue
            with contextlib.suppress(Exception):
                pipe = redis_client().pipeline(transaction=False)
                for key, value in held.items():
                    pipe.set(key, value, px=int(ttl * 1000), xx=True)
                pipe.execute()


_renewer = _Renewer()


@contextlib.contextmanager
def invocation_lease(invocation_id: Any) -> Iterator[None]:
    """Hold the lease for the block; the process's renewer keeps it alive."""
    ttl = settings.SYNTHORG_INVOCATION_LEASE_SECONDS
    key = _key(invocation_id)
    value = json.dumps({"host": socket.gethostname(), "pid": os.getpid()})
    client = redis_client()
    client.set(key, value, px=int(ttl * 1000))
    _renewer.hold(key, value)
    try:
        yield
    finally:
        _renewer.release(key)
        with contextlib.suppress(Exception):
            client.delete(key)
