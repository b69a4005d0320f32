"""What of the audit log a person reads: every event for admins and auditors of the
whole organisation; the events of their teams' agents for those of some teams only."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from audit_app.models import AuditEvent
from audit_app.selectors.browse import audit_filter_choices_among
from audit_app.selectors.events import AuditFilters
from common.team_scope import READ_AUDIT
from trust_app.selectors.teams import agent_ids_in, person_scope


def audit_agents_of(person: Any) -> frozenset[str] | None:
    """The agents (ids as text) whose events ``person`` reads; None for every event."""
    ids = agent_ids_in(person_scope(person, READ_AUDIT))
    return None if ids is None else frozenset(str(i) for i in ids)


def audit_filters_for(person: Any, filters: AuditFilters) -> AuditFilters:
    """``filters`` narrowed to what ``person`` reads."""
    return dataclasses.replace(filters, agents=audit_agents_of(person))


def audit_event_readable(person: Any, event: AuditEvent) -> bool:
    agents = audit_agents_of(person)
    return agents is None or (event.agent_id is not None and str(event.agent_id) in agents)


def audit_invocation_readable(person: Any, invocation_id: uuid.UUID) -> bool:
    """Whether every event of the call is of an agent ``person`` reads."""
    agents = audit_agents_of(person)
    if agents is None:
        return True
    events = AuditEvent.objects.filter(invocation_id=invocation_id)
    return not events.exclude(agent_id__in=sorted(agents)).exists()


def audit_choices_of(person: Any) -> dict[str, list[str]] | None:
    """For each exact filter, the values among the events ``person`` reads, when that is
    not every event (None: the log's own choices serve)."""
    agents = audit_agents_of(person)
    return None if agents is None else audit_filter_choices_among(agents)
