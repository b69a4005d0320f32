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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from common.redis import redis_client

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


@contextlib.contextmanager
def invocation_lease(invocation_id: Any) -> Iterator[None]:
    """Hold the lease for the block, renewing it from a daemon thread."""
    ttl = settings.SYNTHORG_INVOCATION_LEASE_SECONDS
    key = _key(invocation_id)
    value = json.dumps({"host": socket.gethostname(), "pid": os.getpid()})
    client = redis_client()
    client.set(key, value, px=int(ttl * 1000))
    stop = threading.Event()

    def renew() -> None:
        while not stop.wait(ttl / 3):
            with contextlib.suppress(Exception):
                client.set(key, value, px=int(ttl * 1000))

    thread = threading.Thread(target=renew, name=f"lease-{invocation_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        with contextlib.suppress(Exception):
            client.delete(key)
