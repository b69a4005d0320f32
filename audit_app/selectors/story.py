"""One call told as a story for the per-call audit page: what was asked, how it was
decided and why, who decided, what came of it, and what it did outside (connections,
secrets), each part read from the call's audit events (the Invocation row adds the
result's text when it still exists)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from audit_app.models import AuditEvent
from audit_app.selectors.events import invocation_timeline
from tools_app.models import Invocation

DECIDED = "invocation.decided"
FINISHED = "invocation.finished"
CONNECTION = "egress.connection"
SECRET_USED = "secret.used"
# The result text the story shows; the event page shows all of it.
SUMMARY_CHARS = 600


@dataclass(frozen=True)
class Connection:
    event_id: int
    host: str
    port: int | None
    outcome: str
    reason: str
    bytes_up: int | None
    bytes_down: int | None
    secrets: list[str]


@dataclass(frozen=True)
class CallStory:
    invocation_id: uuid.UUID
    timeline: list[AuditEvent]
    agent_name: str = ""
    tool: str = ""
    arguments: str | None = None  # JSON text, secrets redacted as recorded
    decided: AuditEvent | None = None
    trace: list[str] = field(default_factory=list)
    people: list[AuditEvent] = field(default_factory=list)
    finished: AuditEvent | None = None
    status: str = ""
    summary: str = ""
    summary_cut: bool = False
    connections: list[Connection] = field(default_factory=list)
    secret_uses: list[AuditEvent] = field(default_factory=list)


def _connection(event: AuditEvent) -> Connection:
    data: dict[str, Any] = event.data if isinstance(event.data, dict) else {}
    return Connection(
        event_id=event.id,
        host=str(data.get("host") or ""),
        port=data.get("port"),
        outcome=event.outcome,
        reason=event.reason,
        bytes_up=data.get("bytes_up"),
        bytes_down=data.get("bytes_down"),
        secrets=[str(s) for s in data.get("secrets") or []],
    )


def call_story(invocation_id: uuid.UUID) -> CallStory | None:
    """The story of one call, or None when the log holds no event of it."""
    timeline = invocation_timeline(invocation_id)
    if not timeline:
        return None
    invocation = Invocation.objects.filter(id=invocation_id).first()
    decided = next((e for e in timeline if e.kind == DECIDED), None)
    finished = next((e for e in reversed(timeline) if e.kind == FINISHED), None)
    data: dict[str, Any] = decided.data if decided is not None and decided.data else {}
    arguments = data.get("arguments")
    if arguments is None and invocation is not None:
        arguments = invocation.arguments_redacted
    trace = data.get("trace") or (invocation.decision.get("trace") if invocation else None) or []
    content = invocation.content if invocation is not None else ""
    first = timeline[0]
    return CallStory(
        invocation_id=invocation_id,
        timeline=timeline,
        agent_name=first.agent_name,
        tool=next((e.tool for e in timeline if e.tool), ""),
        arguments=None if arguments is None else json.dumps(arguments, indent=2, default=str),
        decided=decided,
        trace=[str(step) for step in trace],
        people=[e for e in timeline if e.actor_type == "person"],
        finished=finished,
        status=invocation.status
        if invocation is not None
        else (finished.status if finished else ""),
        summary=content[:SUMMARY_CHARS],
        summary_cut=len(content) > SUMMARY_CHARS,
        connections=[_connection(e) for e in timeline if e.kind == CONNECTION],
        secret_uses=[e for e in timeline if e.kind == SECRET_USED],
    )
