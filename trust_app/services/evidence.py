"""Evidence writers: invocation outcomes, task outcomes, operators' feedback.

The pipeline calls ``trust_invocation_outcome_record`` inside the transaction
that settles a call; the evaluation it triggers runs after commit in a worker.
Task outcomes and feedback come from people, are audited, and are evaluated
at once so the answer shows their effect.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

import structlog
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.db_rows import insert_instance
from common.errors import ConflictError, ForbiddenError, InvalidArgumentError
from common.roles import ROLES_THAT_DECIDE, has_any_role
from common.vocabulary.categories import ALL_CATEGORIES
from trust_app.models import (
    Agent,
    InvocationFeedback,
    InvocationResult,
    TaskDifficulty,
    TaskOutcome,
    TrustInvocationOutcome,
)
from trust_app.selectors.trust import trust_applies
from trust_app.services.trust import trust_evaluate

log = structlog.get_logger("synthorg.trust")

# Invocation statuses that are evidence, and what they say; the others
# (expired, cancelled, still running) say nothing about the agent's work.
STATUS_RESULT = {
    "succeeded": InvocationResult.SUCCESS,
    "failed": InvocationResult.FAILURE,
    "timed_out": InvocationResult.ERROR,
    "denied": InvocationResult.DENIAL,
}
TASK_ID_MAX = 200
NOTE_MAX = 2000


def _evaluate_later(agent: Agent) -> None:
    from trust_app.tasks import evaluation_request

    def send() -> None:
        try:
            evaluation_request(str(agent.pk))
        except Exception:  # the scheduled re-evaluation catches up
            log.warning("trust_evaluation_not_queued", agent=agent.name, exc_info=True)

    transaction.on_commit(send)


def trust_invocation_outcome_note(*, invocation: Any, status: str, at: datetime) -> None:
    """Record that a call settled with ``status`` as trust evidence (once per call).

    One statement, inside the caller's transaction; a second note for the same
    call changes nothing. An evaluation of the agent follows after commit.
    """
    result = STATUS_RESULT.get(str(status))
    if result is None:
        return
    row = TrustInvocationOutcome(
        invocation_id=invocation.id,
        agent_id=invocation.agent_id,
        category=invocation.category,
        task_id=invocation.task_id or "",
        result=result,
        at=at,
    )
    insert_instance(row, ignore_conflicts=True)
    if trust_applies(invocation.agent):
        _evaluate_later(invocation.agent)


def trust_invocation_outcome_record(*, invocation: Any) -> TrustInvocationOutcome | None:
    """Record how a settled call ended, reading its status back; return the evidence row.

    The status is read back from the database: callers settle a call with an
    update, so the object they hold may still say ``running``.
    """
    settled = (
        type(invocation)
        .objects.filter(pk=invocation.pk)
        .values_list("status", "finished_at")
        .first()
    )
    if settled is None or STATUS_RESULT.get(str(settled[0])) is None:
        return None
    with transaction.atomic():
        trust_invocation_outcome_note(
            invocation=invocation, status=str(settled[0]), at=settled[1] or timezone.now()
        )
    return TrustInvocationOutcome.objects.filter(invocation_id=invocation.id).first()


def _task_fields(
    task_id: Any, difficulty: Any, quality: Any, completed: Any, categories: Any
) -> dict[str, Any]:
    if not isinstance(task_id, str) or not task_id.strip() or len(task_id) > TASK_ID_MAX:
        raise InvalidArgumentError(f"task_id: a non-empty string of at most {TASK_ID_MAX}")
    if difficulty not in TaskDifficulty.values:
        raise InvalidArgumentError(f"difficulty: one of {', '.join(TaskDifficulty.values)}")
    if (
        isinstance(quality, bool)
        or not isinstance(quality, int | float)
        or not math.isfinite(quality)
        or not 0 <= quality <= 10
    ):
        raise InvalidArgumentError("quality: a number from 0 to 10")
    if not isinstance(completed, bool):
        raise InvalidArgumentError("completed: true or false")
    unknown = [c for c in categories if c not in ALL_CATEGORIES]
    if unknown:
        raise InvalidArgumentError(
            f"categories: unknown {', '.join(map(str, unknown))}; allowed: "
            + ", ".join(ALL_CATEGORIES)
        )
    return {
        "task_id": task_id.strip(),
        "difficulty": difficulty,
        "quality": float(quality),
        "completed": completed,
        "categories": sorted(set(categories)),
    }


@transaction.atomic
def task_outcome_report(
    *,
    agent: Agent,
    person: Any,
    task_id: Any,
    difficulty: Any,
    quality: Any,
    completed: Any,
    categories: Any = (),
) -> TaskOutcome:
    """Record a task an orchestrator reports for ``agent`` (operators and admins)."""
    if not has_any_role(person, ROLES_THAT_DECIDE):
        raise ForbiddenError("only operators and admins report task outcomes")
    fields = _task_fields(task_id, difficulty, quality, completed, categories)
    try:
        with transaction.atomic():
            outcome = TaskOutcome.objects.create(
                agent=agent,
                reported_by=person,
                reported_by_name=person.get_username(),
                created_at=timezone.now(),
                **fields,
            )
    except IntegrityError as exc:
        raise ConflictError(f"task {fields['task_id']!r} was already reported") from exc
    audit_record(
        kind="trust.task_outcome",
        actor=Actor.person(person),
        agent=agent,
        outcome="completed" if fields["completed"] else "not_completed",
        data={k: v for k, v in fields.items()},
    )
    trust_evaluate(agent=agent)
    return outcome


@transaction.atomic
def invocation_feedback_record(
    *, invocation: Any, person: Any, rating: Any, note: Any = ""
) -> InvocationFeedback:
    """A person rates one call from 1 to 5, once, with an optional note."""
    if not has_any_role(person, ROLES_THAT_DECIDE):
        raise ForbiddenError("only operators and admins rate calls")
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        raise InvalidArgumentError("rating: a whole number from 1 to 5")
    if not isinstance(note, str) or len(note) > NOTE_MAX:
        raise InvalidArgumentError(f"note: text of at most {NOTE_MAX} characters")
    try:
        with transaction.atomic():
            feedback = InvocationFeedback.objects.create(
                invocation=invocation,
                agent_id=invocation.agent_id,
                person=person,
                person_name=person.get_username(),
                category=invocation.category,
                rating=rating,
                note=note.strip(),
                created_at=timezone.now(),
            )
    except IntegrityError as exc:
        raise ConflictError("you have already rated this call") from exc
    audit_record(
        kind="trust.feedback",
        actor=Actor.person(person),
        agent=invocation.agent,
        invocation_id=invocation.id,
        tool=invocation.tool,
        category=invocation.category,
        outcome=str(rating),
        reason=note.strip(),
    )
    trust_evaluate(agent=invocation.agent)
    return feedback
