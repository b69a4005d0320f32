"""Verification of the audit chain asked for in the console, run by a Celery worker.

audit_verification_request records who asked and queues the run; the worker moves it
queued→running by compare-and-set (a redelivered task finds it taken and stops),
reports progress per chunk, and records the result as an `audit.verified` event.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tools_app.audit_verify import audit_chain_verify
from tools_app.models import AuditEvent, AuditVerification, VerificationStatus
from tools_app.services.audit import Actor, audit_record


def audit_verification_request(*, person: Any) -> AuditVerification:
    """Queue a verification of the whole chain for `person` (an admin or an auditor).

    While one is queued or running (and younger than its time limit) that one is
    returned: a second run would only repeat it.
    """
    from tools_app.tasks import verify_audit_chain

    with transaction.atomic():
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
        transaction.on_commit(lambda: verify_audit_chain.delay(run.id))
    return run


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
    status = VerificationStatus.PASSED if report.ok else VerificationStatus.FAILED
    with transaction.atomic():
        AuditVerification.objects.filter(id=verification_id).update(
            status=status,
            finished_at=timezone.now(),
            checked=report.checked,
            checkpoints=report.checkpoints,
            first_bad_event=report.first_bad_event,
            summary=report.summary(),
        )
        audit_record(
            kind="audit.verified",
            actor=Actor.system("audit verification"),
            outcome=status.value,
            reason=report.summary(),
            data={"verification": verification_id, "checked": report.checked,
                  "first_bad_event": report.first_bad_event},
        )  # fmt: skip
    return AuditVerification.objects.get(id=verification_id)
