"""Reads of secrets and grants for pages, the command and the agent page. Never values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Prefetch

from secrets_app.models import Secret, SecretGrant
from trust_app.models import Agent


@dataclass(frozen=True)
class SecretRow:
    name: str
    version: int
    active: bool
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None
    key_id: str
    grants: tuple[SecretGrant, ...]


def secret_list(*, include_revoked: bool = True) -> list[SecretRow]:
    """Every secret with its grants, newest version's key, and when it was last used."""
    secrets = Secret.objects.prefetch_related(
        Prefetch("grants", queryset=SecretGrant.objects.select_related("agent"))
    ).prefetch_related("versions")
    if not include_revoked:
        secrets = secrets.filter(revoked_at__isnull=True)
    rows = []
    for secret in secrets:
        newest = next(
            (v for v in secret.versions.all() if v.number == secret.current_version), None
        )
        rows.append(
            SecretRow(
                name=secret.name,
                version=secret.current_version,
                active=secret.active,
                created_at=secret.created_at,
                updated_at=secret.updated_at,
                last_used_at=secret.last_used_at,
                revoked_at=secret.revoked_at,
                key_id=newest.key_id if newest is not None else "",
                grants=tuple(secret.grants.all()),
            )
        )
    return rows


def agent_secret_grants(*, agent: Agent) -> list[SecretGrant]:
    """The agent's grants (secret name and use), for its page."""
    return list(
        SecretGrant.objects.filter(agent=agent, secret__revoked_at__isnull=True).select_related(
            "secret"
        )
    )


@dataclass(frozen=True)
class SecretDestination:
    """Where a call's secret would go, as its grant says now (for the approval card)."""

    name: str
    where: str
    hosts: tuple[str, ...]
    inject: str
    granted: bool


def call_secret_destinations(
    *, agent: Agent | None, tool: str, arguments: object
) -> list[SecretDestination]:
    """Each secret the call refers to, with the hosts its grant sends the value to."""
    from secrets_app.references import find_references

    references = find_references(arguments if isinstance(arguments, dict) else {})
    if not references or agent is None:
        return []
    grants = {
        g.secret.name: g
        for g in SecretGrant.objects.filter(
            agent=agent,
            tool=tool,
            secret__name__in={r.name for r in references},
            secret__revoked_at__isnull=True,
        ).select_related("secret")
    }
    found = []
    for reference in references:
        grant = grants.get(reference.name)
        found.append(
            SecretDestination(
                name=reference.name,
                where=reference.where,
                hosts=tuple(grant.hosts or ()) if grant else (),
                inject=(grant.inject or "bearer") if grant and grant.hosts else "",
                granted=grant is not None,
            )
        )
    return found
