""" "Approve and remember": grants an operator gives one agent for one tool, for a while."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from approvals_app.models import ApprovalGrant, ApprovalRequest
from audit_app.record import Actor, audit_record
from common.errors import ConflictError, ForbiddenError, InvalidArgumentError, NotFoundError
from common.roles import ROLES_THAT_DECIDE, has_any_role
from common.settings_config import synthorg_config
from trust_app.policy_changes import policy_changed_on_commit

PATTERN_FIELDS_MAX = 20
PATTERN_GLOB_MAX = 500


@dataclass(frozen=True)
class GrantSpec:
    """How long to remember, and the argument pattern (empty: the exact arguments)."""

    minutes: int
    pattern: dict[str, str] = field(default_factory=dict)


def _check(spec: GrantSpec) -> None:
    limit = synthorg_config().approval.grant_max_minutes
    if not 1 <= spec.minutes <= limit:
        raise InvalidArgumentError(f"a grant lasts 1 to {limit} minutes")
    grant_pattern_check(spec.pattern)


def grant_pattern_check(pattern: dict[str, str]) -> None:
    """Refuse a pattern no grant may hold (InvalidArgumentError saying why)."""
    if len(pattern) > PATTERN_FIELDS_MAX:
        raise InvalidArgumentError(f"a grant pattern names at most {PATTERN_FIELDS_MAX} fields")
    for name, glob in pattern.items():
        if not isinstance(name, str) or not isinstance(glob, str) or not name or not glob:
            raise InvalidArgumentError("a grant pattern maps argument names to non-empty globs")
        if len(glob) > PATTERN_GLOB_MAX:
            raise InvalidArgumentError(f"a grant glob has at most {PATTERN_GLOB_MAX} characters")
        if glob.strip("*?") == "":
            # A bare wildcard would grant every value: name the values instead.
            raise InvalidArgumentError(f"the glob for {name!r} matches everything")


@transaction.atomic
def approval_grant_create(
    *,
    agent: Any,
    tool: str,
    person: Any,
    spec: GrantSpec,
    arguments_hash: str,
    source_request: ApprovalRequest | None = None,
) -> ApprovalGrant:
    """Remember an approval: later calls it covers are approved, naming the grant."""
    if not has_any_role(person, ROLES_THAT_DECIDE):
        raise ForbiddenError("granting needs the operators or admins role")
    _check(spec)
    grant = ApprovalGrant.objects.create(
        agent=agent,
        tool=tool,
        arguments_hash="" if spec.pattern else arguments_hash,
        pattern=dict(spec.pattern),
        source_request=source_request,
        granted_by=person,
        granted_by_name=person.get_username(),
        expires_at=timezone.now() + timedelta(minutes=spec.minutes),
    )
    audit_record(
        kind="approval.grant_created",
        actor=Actor.person(person),
        agent=agent,
        invocation_id=source_request.invocation_id if source_request else None,
        tool=tool,
        arguments_hash=grant.arguments_hash,
        outcome="granted",
        reason=f"for {spec.minutes} minutes",
        data={
            "grant": str(grant.id),
            "pattern": grant.pattern,
            "expires_at": grant.expires_at.isoformat(),
        },
    )
    # Requests of this agent that the grant covers would no longer ask: their cards say so.
    policy_changed_on_commit(
        agents=[agent], cause=f"{person.get_username()} remembered an approval of {tool}",
        actor=Actor.person(person),
    )  # fmt: skip
    return grant


@transaction.atomic
def approval_grant_revoke(*, grant: ApprovalGrant | Any, person: Any) -> ApprovalGrant:
    """Revoke a grant now (compare-and-set: a second revoke is a 409)."""
    if not has_any_role(person, ROLES_THAT_DECIDE):
        raise ForbiddenError("revoking grants needs the operators or admins role")
    from common.team_scope import DECIDE
    from trust_app.selectors.teams import person_scope, team_q

    grant_id = grant.id if isinstance(grant, ApprovalGrant) else grant
    now = timezone.now()
    yours = ApprovalGrant.objects.filter(team_q(person_scope(person, DECIDE), "agent__team_id"))
    if not yours.filter(id=grant_id).exists():
        raise NotFoundError(f"no grant {grant_id} among your teams' agents")
    revoked = ApprovalGrant.objects.filter(id=grant_id, revoked_at__isnull=True).update(
        revoked_at=now, revoked_by_name=person.get_username()
    )
    if not revoked:
        raise ConflictError("this grant was already revoked")
    found = ApprovalGrant.objects.select_related("agent").get(id=grant_id)
    audit_record(
        kind="approval.grant_revoked",
        actor=Actor.person(person),
        agent=found.agent,
        tool=found.tool,
        arguments_hash=found.arguments_hash,
        outcome="revoked",
        data={"grant": str(found.id), "uses": found.uses},
    )
    policy_changed_on_commit(
        agents=[found.agent], cause=f"{person.get_username()} revoked a remembered approval",
        actor=Actor.person(person),
    )  # fmt: skip
    return found
