"""What is a state rather than an event, read when /metrics is scraped.

Pending approvals come from the database, queue depth and the workers' heartbeats
from Redis, so every web node answers the same whichever one is scraped. A part
that cannot be read is reported as ``synthorg_scrape_part_up{part} 0`` instead of
failing the whole scrape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import structlog
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = structlog.get_logger(__name__)


def _approvals() -> Iterator[GaugeMetricFamily]:
    from approvals_app.models import ApprovalRequest, ApprovalStatus

    found = ApprovalRequest.objects.filter(status=ApprovalStatus.PENDING).aggregate(
        count=Count("id"), oldest=Min("created_at")
    )
    yield GaugeMetricFamily(
        "synthorg_approvals_pending", "Approval requests waiting for a person.", found["count"]
    )
    oldest = found["oldest"]
    age = max((timezone.now() - oldest).total_seconds(), 0.0) if oldest is not None else 0.0
    yield GaugeMetricFamily(
        "synthorg_approvals_pending_oldest_seconds",
        "Age of the oldest approval request still waiting (0 when none waits).",
        age,
    )


def _queues() -> Iterator[GaugeMetricFamily]:
    from common.platform.redis import redis_client
    from synthorg_site.celery import QUEUES

    client = redis_client()
    depth = GaugeMetricFamily(
        "synthorg_queue_depth", "Tasks waiting in each Celery queue.", labels=["queue"]
    )
    with client.pipeline(transaction=False) as pipe:
        for queue in QUEUES:
            pipe.llen(queue)
        lengths = pipe.execute()
    for queue, length in zip(QUEUES, lengths, strict=True):
        depth.add_metric([queue], float(length))
    yield depth


def _workers() -> Iterator[GaugeMetricFamily]:
    from common.platform.heartbeat import worker_heartbeats

    beats = worker_heartbeats()
    yield GaugeMetricFamily(
        "synthorg_workers_seen", "Celery workers whose heartbeat is in Redis.", len(beats)
    )
    age = GaugeMetricFamily(
        "synthorg_worker_heartbeat_age_seconds",
        "Seconds since each worker's last heartbeat.",
        labels=["worker"],
    )
    for beat in beats:
        age.add_metric([beat.name], beat.age_seconds)
    yield age


PARTS: dict[str, Callable[[], Iterator[GaugeMetricFamily]]] = {
    "approvals": _approvals,
    "queues": _queues,
    "workers": _workers,
}


class ConsoleStateCollector(Collector):
    """Gauges computed at scrape time from the database and Redis."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "synthorg_scrape_part_up",
            "1 when the part could be read for this scrape, 0 when it could not.",
            labels=["part"],
        )
        for name, part in PARTS.items():
            try:
                families = list(part())
            except Exception:
                log.warning("metrics_part_unreadable", part=name, exc_info=True)
                up.add_metric([name], 0.0)
                continue
            up.add_metric([name], 1.0)
            yield from families
        yield up
