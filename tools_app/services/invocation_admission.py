"""invocation_admission: an agent's calls run at most N at once; the rest wait in line.

Every change to an agent's line runs in the caller's transaction after
``agent_line_lock`` (the agent's row, locked before any invocation row and before the
audit chain's lock, so two writers of one line never deadlock and never both take the
last slot):

- ``invocation_admission``: a new call either starts at once (a free slot, nobody
  waiting) or waits, ``queued`` and ``held``;
- ``agent_line_advance``: after a call leaves the line's slots (finished, cancelled)
  or joins its waiting calls (approved), the waiting calls start, oldest first, while
  slots are free; each is sent to its queue on commit.

``invocations_dispatch_sweep`` (beat) repairs what a crash between a commit and its
message left: a queued call sent long ago and never claimed is sent again (the claim's
compare-and-set keeps it exactly-once), and agents with free slots and waiting calls
advance.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import structlog
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from tools_app.admission.line import WaitingCall, calls_to_start, starts_at_once
from tools_app.models import Invocation, InvocationStatus
from tools_app.services.invocation_dispatch import (
    DISPATCH_FIELDS,
    enqueue_invocation,
    invocation_dispatch_on_commit,
)
from trust_app.models import Agent
from trust_app.selectors.agents import agent_cap

log = structlog.get_logger("synthorg.admission")

QUEUED = InvocationStatus.QUEUED
IN_LINE = (InvocationStatus.QUEUED, InvocationStatus.RUNNING)
# At most this many waiting calls are looked at in one advance (an agent's cap is smaller).
_ADVANCE_LOOKAHEAD = 500
_SWEEP_BATCH = 500


def agent_line_lock(agent_id: uuid.UUID) -> None:
    """Hold the agent's line until the caller's transaction ends (its row, locked)."""
    agent_line_hold(agent_id)


@dataclass(frozen=True)
class LineCounts:
    """An agent's calls that hold a slot, and those waiting for one."""

    in_flight: int
    waiting: int


def _hold_sql(vendor: str) -> str:
    """The lock of the agent's row and the count of its line, as one round trip.

    Built once per database backend from the models' metadata. On PostgreSQL the two
    statements run in order in one request, and the count takes its snapshot after
    the lock is held, so it sees every change the line's previous holder committed.
    """
    sql = _hold_statements.get(vendor)
    if sql is not None:
        return sql
    quote = connection.ops.quote_name
    agents, calls = quote(Agent._meta.db_table), quote(Invocation._meta.db_table)
    agent_pk = quote(str(Agent._meta.get_field("id").column))
    agent_fk = quote(str(Invocation._meta.get_field("agent").column))
    held, status = quote("held"), quote("status")
    statuses = ", ".join(f"'{value}'" for value in IN_LINE)
    count = (
        f"SELECT COALESCE(SUM(CASE WHEN {held} THEN 0 ELSE 1 END), 0),"  # noqa: S608
        f" COALESCE(SUM(CASE WHEN {held} THEN 1 ELSE 0 END), 0)"
        f" FROM {calls} WHERE {agent_fk} = %s AND {status} IN ({statuses})"
    )
    if vendor == "postgresql":
        # FOR NO KEY UPDATE: rows that refer to the agent (their foreign key checks take
        # a key-share lock) are written beside it freely.
        lock = f"SELECT 1 FROM {agents} WHERE {agent_pk} = %s FOR NO KEY UPDATE"  # noqa: S608
        sql = f"{lock}; {count}"
    else:  # SQLite runs one writer at a time: the transaction is the lock.
        sql = count
    _hold_statements[vendor] = sql
    return sql


_hold_statements: dict[str, str] = {}


def agent_line_hold(agent_id: uuid.UUID) -> LineCounts:
    """Lock the agent's line until the caller's transaction ends, and count it."""
    sql = _hold_sql(connection.vendor)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Several statements go in one request only without parameters: the id is
            # written in, as a UUID's own text (hex digits and dashes).
            cursor.execute(sql.replace("%s", f"'{uuid.UUID(str(agent_id))}'"))
            cursor.nextset()
        else:
            field = Invocation._meta.get_field("agent")
            cursor.execute(sql, [field.get_db_prep_value(agent_id, connection)])
        in_flight, waiting = cursor.fetchone()
    return LineCounts(in_flight=int(in_flight), waiting=int(waiting))


def invocation_admission(*, agent: Agent) -> bool:
    """Lock the agent's line and say whether a new call of it may start at once."""
    counts = agent_line_hold(agent.id)
    return starts_at_once(cap=agent_cap(agent), in_flight=counts.in_flight, waiting=counts.waiting)


def agent_line_advance(*, agent: Agent, locked: bool = False) -> int:
    """Start the agent's waiting calls while it has free slots; how many started.

    ``locked``: the caller took ``agent_line_lock`` in this transaction already.
    """
    if not locked:
        agent_line_lock(agent.id)
    waiting = list(
        Invocation.objects.filter(agent_id=agent.id, status=QUEUED, held=True)
        .order_by("created_at", "id")
        .values_list("id", "batch_id", "batch_max_concurrency")[:_ADVANCE_LOOKAHEAD]
    )
    if not waiting:
        return 0
    busy = list(
        Invocation.objects.filter(agent_id=agent.id, status__in=IN_LINE, held=False)
        .values("batch_id")
        .annotate(n=Count("id"))
    )
    starting = calls_to_start(
        cap=agent_cap(agent),
        in_flight=sum(row["n"] for row in busy),
        in_flight_by_batch={row["batch_id"]: row["n"] for row in busy if row["batch_id"]},
        waiting=[WaitingCall(id=i, batch_id=b, batch_limit=limit) for i, b, limit in waiting],
    )
    if not starting:
        return 0
    now = timezone.now()
    Invocation.objects.filter(id__in=starting, status=QUEUED, held=True).update(
        held=False, dispatched_at=now, updated_at=now
    )
    for invocation in Invocation.objects.filter(id__in=starting).only(*DISPATCH_FIELDS):
        invocation_dispatch_on_commit(invocation)
    return len(starting)


def invocations_dispatch_sweep() -> dict[str, int]:
    """Send again what was sent long ago and never claimed; advance lines left waiting."""
    cutoff = timezone.now() - timedelta(seconds=settings.SYNTHORG_DISPATCH_RESEND_SECONDS)
    stale = list(
        Invocation.objects.filter(status=QUEUED, held=False)
        # Never sent (its send failed), or sent long ago and still not claimed.
        .filter(Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=cutoff))
        .order_by("created_at")
        .only(*DISPATCH_FIELDS)[:_SWEEP_BATCH]
    )
    resent = 0
    for invocation in stale:
        # Marked first: a second sweep does not send it again before the grace passes.
        marked = Invocation.objects.filter(id=invocation.id, status=QUEUED, held=False).update(
            dispatched_at=timezone.now()
        )
        if marked:
            enqueue_invocation(invocation)
            resent += 1
    if resent:
        log.warning("invocations_resent", count=resent)
    advanced = 0
    agent_ids = list(
        Invocation.objects.filter(status=QUEUED, held=True)
        .values_list("agent_id", flat=True)
        .distinct()[:_SWEEP_BATCH]
    )
    for agent in Agent.objects.filter(id__in=agent_ids):
        with transaction.atomic():
            advanced += agent_line_advance(agent=agent)
    if advanced:
        log.warning("invocation_lines_advanced", count=advanced)
    return {"resent": resent, "advanced": advanced}
