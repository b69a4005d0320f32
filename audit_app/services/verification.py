"""Verification of the audit chain asked for in the console, run by a Celery worker.

audit_verification_request records who asked and queues the run; the worker moves it
queued→running by compare-and-set (a redelivered task finds it taken and stops),
reports progress per chunk, and records the result as an `audit.verified` event. A run
whose process stopped before it had a result (a worker killed, the command's process
ended) is marked abandoned once past its time limit, with an `audit.verify_abandoned`
event, by beat's sweep or by the next request.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.chain import AuditChainUnkeyedError
from audit_app.models import AuditEvent, AuditVerification, VerificationStatus
from audit_app.record import Actor, audit_record
from audit_app.verify import ChainReport, audit_chain_verify

VERIFY_TASK = "tools_app.verify_audit_chain"


def audit_verification_request(*, person: Any) -> AuditVerification:
    """Queue a verification of the whole chain for `person` (an admin or an auditor).

    While one is queued or running (and younger than its time limit) that one is
    returned: a second run would only repeat it.
    """
    with transaction.atomic():
        audit_verifications_abandon()
        recent = timezone.now() - timedelta(seconds=settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT)
        current = (
            AuditVerification.objects.select_for_update()
            .filter(
                status__in=(VerificationStatus.QUEUED, VerificationStatus.RUNNING),
                requested_at__gte=recent,
            )
            .order_by("-id")
            .first()
        )
        if current is not None:
            return current
        run = AuditVerification.objects.create(
            requested_by=person.get_username(), requested_at=timezone.now()
        )
        audit_record(
            kind="audit.verify_requested",
            actor=Actor.person(person),
            reason=f"verification #{run.id} of the audit chain was asked for",
            data={"verification": run.id},
        )
        # By name (audit_app.tasks.verify_audit_chain): the task module imports this one.
        transaction.on_commit(lambda: current_app.send_task(VERIFY_TASK, args=[run.id]))
    return run


def audit_verifications_abandon() -> int:
    """Mark abandoned the runs still queued or running past their time limit (their
    process stopped without a result; the task's own hard limit is past too); how many."""
    limit = settings.SYNTHORG_AUDIT_VERIFY_TIME_LIMIT
    now = timezone.now()
    marked = 0
    with transaction.atomic():
        stale = AuditVerification.objects.select_for_update(skip_locked=True).filter(
            status__in=(VerificationStatus.QUEUED, VerificationStatus.RUNNING),
            requested_at__lt=now - timedelta(seconds=limit),
        )
        for run in stale:
            summary = (
                f"verification #{run.id} ended without a result: it was still {run.status} "
                f"{limit} s after it was asked for (its process stopped), after checking "
                f"{run.checked} of {run.total} event(s)"
            )
            AuditVerification.objects.filter(id=run.id).update(
                status=VerificationStatus.ABANDONED, finished_at=now, summary=summary
            )
            audit_record(
                kind="audit.verify_abandoned",
                actor=Actor.system("audit verification"),
                outcome=VerificationStatus.ABANDONED.value,
                reason=summary,
                data={"verification": run.id, "checked": run.checked},
            )
            marked += 1
    return marked


def audit_verification_run_here(*, requested_by: str) -> AuditVerification:
    """Verify now in this process (the `synthorg_audit verify` command), recorded like a
    run asked for in the console, so the audit pages show its result too."""
    run = AuditVerification.objects.create(requested_by=requested_by, requested_at=timezone.now())
    done = audit_verification_run(verification_id=run.id)
    if done is None:  # only this process knows the run made a line above
        raise RuntimeError(f"audit verification #{run.id} was taken by another process")
    return done


def audit_verification_run(*, verification_id: int) -> AuditVerification | None:
    """Run a queued verification; None when another worker has it already."""
    claimed = AuditVerification.objects.filter(
        id=verification_id, status=VerificationStatus.QUEUED
    ).update(
        status=VerificationStatus.RUNNING,
        started_at=timezone.now(),
        total=AuditEvent.objects.count(),
    )
    if not claimed:
        return None

    def progress(checked: int) -> None:
        AuditVerification.objects.filter(id=verification_id).update(checked=checked)

    report = audit_chain_verify(progress=progress)
    run = AuditVerification.objects.get(id=verification_id)
    status = VerificationStatus.PASSED if report.ok else VerificationStatus.FAILED
    result = {
        "status": status,
        "finished_at": timezone.now(),
        "checked": report.checked,
        "checkpoints": report.checkpoints,
        "first_bad_event": report.first_bad_event,
        "summary": report.summary(),
    }
    try:
        _verification_record(run, report, status, result)
    except AuditChainUnkeyedError:
        # The log ends in unkeyed events (what this run has just reported): it takes no
        # keyed event until a person checks it, so the result is kept in the table only
        # (the status panel says why the log holds none).
        AuditVerification.objects.filter(id=verification_id).update(**result)
    return AuditVerification.objects.get(id=verification_id)


def _verification_record(
    run: AuditVerification,
    report: ChainReport,
    status: VerificationStatus,
    result: dict[str, Any],
) -> None:
    verification_id = run.id
    with transaction.atomic():
        AuditVerification.objects.filter(id=verification_id).update(**result)
        audit_record(
            kind="audit.verified",
            actor=Actor.system("audit verification"),
            outcome=status.value,
            reason=report.summary(),
            # Everything the status panel shows: it reads the result from this keyed
            # event, not from the status table (see selectors/browse.py).
            data={"verification": verification_id, "checked": report.checked,
                  "checkpoints": report.checkpoints, "first_bad_event": report.first_bad_event,
                  "requested_by": run.requested_by},
        )  # fmt: skip
