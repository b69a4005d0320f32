"""PURE: the queues calls travel on, and which lane a call takes.

Each sandbox backend has a queue, so a slow backend never starves another and each can
be scaled with workers of its own. Beside each runs a quick lane: calls of the file and
memory tools (bounded by short time limits, never waiting on the outside world) go
there, and a worker that serves quick lanes only keeps them moving while every other
worker's slots hold long calls (a `sleep`, a download, a person-sized wait upstream).
Workers that serve everything take quick calls too.
"""

from __future__ import annotations

from typing import Final

SANDBOX_BACKENDS: Final = ("subprocess", "namespace", "docker")
QUICK_CATEGORIES: Final = frozenset({"file_system", "memory"})
QUICK_SUFFIX: Final = ".quick"

SANDBOX_QUEUES: Final = tuple(f"sandbox.{backend}" for backend in SANDBOX_BACKENDS)
QUICK_QUEUES: Final = tuple(queue + QUICK_SUFFIX for queue in SANDBOX_QUEUES)
# Every queue: a worker that serves them all is the default.
QUEUES: Final = ("default", *SANDBOX_QUEUES, *QUICK_QUEUES, "maintenance")


def call_queue(*, backend: str, category: str) -> str:
    """The queue of a call of ``category`` that runs on ``backend``."""
    queue = f"sandbox.{backend}"
    return queue + QUICK_SUFFIX if category in QUICK_CATEGORIES else queue
