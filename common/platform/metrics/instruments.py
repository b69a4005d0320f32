"""The counters and histograms every process writes, and the calls that write them.

Each record is taken after the transaction that made the change commits, so a
rolled-back change is never counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

import structlog
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from prometheus_client import Counter, Histogram

log = structlog.get_logger("synthorg.metrics")


_built: dict[str, Any] = {}
_building = threading.Lock()


def _instruments() -> dict[str, Any]:
    """The instruments, built once per process on first use (after settings named the
    multiprocess directory); threads that ask at once wait for the one that builds
    them, since a second registration of a name is refused."""
    if _built:
        return _built
    with _building:
        if not _built:
            _built.update(_build())
    return _built


def _build() -> dict[str, Any]:
    latency = tuple(settings.SYNTHORG_METRICS_LATENCY_BUCKETS)
    call = tuple(settings.SYNTHORG_METRICS_CALL_BUCKETS)
    return {
        "calls": Counter(
            "synthorg_calls",
            "Tool calls that reached a terminal status, by tool and status.",
            ["tool", "status"],
        ),
        "decisions": Counter(
            "synthorg_decisions",
            "Tool calls decided, by tool and outcome (allow, deny, require_approval).",
            ["tool", "outcome"],
        ),
        "decision_seconds": Histogram(
            "synthorg_decision_seconds",
            "Time to decide one call: permission, sub-constraints, approval routing, record.",
            buckets=latency,
        ),
        "call_seconds": Histogram(
            "synthorg_call_seconds",
            "Time from a call's submission to its terminal status, by status.",
            ["status"],
            buckets=call,
        ),
        "sandbox_start_seconds": Histogram(
            "synthorg_sandbox_start_seconds",
            "Time a sandbox backend spends before the command's own clock starts "
            "(preparing the namespace view, acquiring or starting the container).",
            ["backend"],
            buckets=latency,
        ),
        "sandbox_run_seconds": Histogram(
            "synthorg_sandbox_run_seconds",
            "Wall time of one sandboxed command, start and teardown included, by backend.",
            ["backend"],
            buckets=call,
        ),
    }


def _after_commit(record: Callable[[], None]) -> None:
    def safely() -> None:
        # A count that cannot be written never fails what it counts (a call that ran).
        try:
            record()
        except Exception:
            log.exception("metric_not_recorded")

    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(safely)
    else:
        safely()


def call_decided(*, tool: str, outcome: str, seconds: float) -> None:
    """A call was decided (and recorded) in ``seconds``."""

    def record() -> None:
        found = _instruments()
        found["decisions"].labels(tool=tool, outcome=outcome).inc()
        found["decision_seconds"].observe(seconds)

    _after_commit(record)


def call_settled(*, tool: str, status: str, created_at: datetime | None) -> None:
    """A call reached the terminal ``status``; its end-to-end time runs from ``created_at``."""
    settled_at = timezone.now()

    def record() -> None:
        found = _instruments()
        found["calls"].labels(tool=tool, status=status).inc()
        if created_at is not None:
            elapsed = max((settled_at - created_at).total_seconds(), 0.0)
            found["call_seconds"].labels(status=status).observe(elapsed)

    _after_commit(record)


def sandbox_ran(*, backend: str, wall_seconds: float, command_seconds: float) -> None:
    """One sandboxed command took ``wall_seconds``, of which the command's own clock
    measured ``command_seconds``."""

    def record() -> None:
        found = _instruments()
        found["sandbox_run_seconds"].labels(backend=backend).observe(wall_seconds)
        found["sandbox_start_seconds"].labels(backend=backend).observe(
            max(wall_seconds - command_seconds, 0.0)
        )

    try:
        record()
    except Exception:
        log.exception("metric_not_recorded")
