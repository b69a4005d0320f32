"""Settle calls left `running` by a worker that died (no live lease)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from tools_app.models import Invocation, InvocationStatus
from tools_app.worker.lease import holder_is_alive


def invocations_abandoned_settle() -> int:
    """Each running call older than one lease period with no live lease is settled."""
    from tools_app.services.invocation_execute import invocation_worker_lost

    cutoff = timezone.now() - timedelta(seconds=settings.SYNTHORG_INVOCATION_LEASE_SECONDS)
    settled = 0
    running = Invocation.objects.select_related("agent").filter(
        status=InvocationStatus.RUNNING, started_at__lt=cutoff
    )
    for invocation in running[:200]:
        if not holder_is_alive(invocation.id):
            invocation_worker_lost(invocation=invocation, worker="sweeper")
            settled += 1
    return settled
