"""Writers for agent tokens: issue, rotate with an overlap, revoke. Each in one transaction
with its audit row; a token's plaintext is returned once and never stored."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ConflictError, InvalidArgumentError
from trust_app.models import Agent, AgentToken
from trust_app.tokens.bearer import AGENT_TOKEN_PREFIX, issue_token
from trust_app.tokens.life import DEFAULT_SCOPES, TokenScopesInvalidError, scopes_parse


@dataclass(frozen=True)
class IssuedAgentToken:
    token: AgentToken
    plaintext: str


def default_token_expiry(now: datetime) -> datetime | None:
    """When a token issued ``now`` expires by default (SYNTHORG_AGENT_TOKEN_TTL_DAYS; 0: never)."""
    days = settings.SYNTHORG_AGENT_TOKEN_TTL_DAYS
    return now + timedelta(days=days) if days > 0 else None


def _scopes(scopes: Iterable[str] | None) -> list[str]:
    if scopes is None:
        return list(DEFAULT_SCOPES)
    try:
        return list(scopes_parse(scopes))
    except TokenScopesInvalidError as exc:
        raise InvalidArgumentError(f"scopes: {exc}") from exc


def _expiry(expires_at: datetime | None, never: bool, now: datetime) -> datetime | None:
    if never:
        return None
    if expires_at is None:
        return default_token_expiry(now)
    if expires_at <= now:
        raise InvalidArgumentError(
            f"expires_at: {expires_at.isoformat()} is not in the future; give a later time"
        )
    return expires_at


def agent_token_create(
    *,
    agent: Agent,
    label: str = "",
    scopes: Iterable[str] | None = None,
    expires_at: datetime | None = None,
    never_expires: bool = False,
) -> IssuedAgentToken:
    """The token row alone (no audit row): for writers that audit the larger change."""
    now = timezone.now()
    issued = issue_token(AGENT_TOKEN_PREFIX)
    token = AgentToken.objects.create(
        agent=agent,
        public_id=issued.public_id,
        digest=issued.digest,
        label=label[:100],
        scopes=_scopes(scopes),
        expires_at=_expiry(expires_at, never_expires, now),
    )
    return IssuedAgentToken(token=token, plaintext=issued.plaintext)


def _token_data(token: AgentToken) -> dict[str, object]:
    return {
        "token": token.public_id,
        "label": token.label,
        "scopes": list(token.scopes),
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
    }


@transaction.atomic
def agent_token_issue(
    *,
    agent: Agent,
    actor: Actor,
    label: str = "",
    scopes: Iterable[str] | None = None,
    expires_at: datetime | None = None,
    never_expires: bool = False,
) -> IssuedAgentToken:
    """A new token for the agent, with its scopes (default: agent_api and mcp) and
    expiry (default: SYNTHORG_AGENT_TOKEN_TTL_DAYS from now)."""
    issued = agent_token_create(
        agent=agent, label=label, scopes=scopes, expires_at=expires_at, never_expires=never_expires
    )
    audit_record(
        kind="agent.token_issued",
        actor=actor,
        agent=agent,
        outcome="issued",
        data=_token_data(issued.token),
    )
    return issued


@transaction.atomic
def agent_token_rotate(
    *, token: AgentToken, actor: Actor, overlap_seconds: int | None = None
) -> IssuedAgentToken:
    """Replace ``token`` by a new one with the same label and scopes; the old one stays
    valid for the overlap (SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS by default), so
    the agent can switch without a gap, and is refused after it."""
    overlap = (
        settings.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_SECONDS
        if overlap_seconds is None
        else overlap_seconds
    )
    if overlap < 0 or overlap > settings.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS:
        raise InvalidArgumentError(
            f"overlap: {overlap} seconds is out of range; give 0 to "
            f"{settings.SYNTHORG_AGENT_TOKEN_ROTATION_OVERLAP_MAX_SECONDS}"
        )
    now = timezone.now()
    old = AgentToken.objects.select_for_update().filter(pk=token.pk).first()
    live = old is not None and old.revoked_at is None and old.rotated_at is None
    if old is None or not live or (old.expires_at is not None and old.expires_at <= now):
        raise ConflictError(
            f"token {token.public_id} is revoked, expired or already rotated; "
            "issue a new token instead"
        )
    valid_until = now + timedelta(seconds=overlap)
    if old.expires_at is not None:
        valid_until = min(valid_until, old.expires_at)
    AgentToken.objects.filter(pk=old.pk).update(rotated_at=now, expires_at=valid_until)
    issued = agent_token_create(agent=old.agent, label=old.label, scopes=old.scopes)
    audit_record(
        kind="agent.token_rotated",
        actor=actor,
        agent=old.agent,
        outcome="rotated",
        data={
            **_token_data(issued.token),
            "replaces": old.public_id,
            "replaced_valid_until": valid_until.isoformat(),
        },
    )
    return issued


@transaction.atomic
def agent_token_revoke(*, token: AgentToken, actor: Actor) -> bool:
    """Refuse the token from now on; False when it was already revoked."""
    updated = AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if updated:
        audit_record(
            kind="agent.token_revoked",
            actor=actor,
            agent=token.agent,
            outcome="revoked",
            data={"token": token.public_id},
        )
    return bool(updated)
