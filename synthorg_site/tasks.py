"""Site-level periodic tasks."""

from __future__ import annotations

from celery import shared_task

from common.platform.heartbeat import write_beat_heartbeat


@shared_task(name="synthorg_site.tasks.beat_heartbeat", ignore_result=True, quiet=True)
def beat_heartbeat() -> None:
    """Proves beat schedules and a maintenance worker runs what it schedules."""
    write_beat_heartbeat()
