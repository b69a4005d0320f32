"""Whether an agent token may be used now, and for what: its life and its scopes.

Pure: no Django imports. A token is refused, with words its holder can act on, when
it was revoked, when it expired (or its rotation's overlap ran out), when its agent
is inactive, or when the door it knocks on is not one of its scopes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime


class Scope(enum.StrEnum):
    """The doors an agent token opens."""

    AGENT_API = "agent_api"
    MCP = "mcp"
    METRICS = "metrics"


SCOPE_VALUES: tuple[str, ...] = tuple(s.value for s in Scope)
# What a token gets when whoever issues it names no scopes: an agent's own doors.
DEFAULT_SCOPES: tuple[str, ...] = (Scope.AGENT_API.value, Scope.MCP.value)

DOOR_OF_SCOPE = {
    Scope.AGENT_API: "the agent API (/api/v1/)",
    Scope.MCP: "the MCP gateway (/mcp/)",
    Scope.METRICS: "GET /metrics",
}


class TokenScopesInvalidError(ValueError):
    """A list of scopes named one the console does not know, or none at all."""


def scopes_parse(values: Iterable[str]) -> tuple[str, ...]:
    """The scopes named, in their canonical order; raise naming the allowed ones."""
    wanted = [str(v).strip() for v in values if str(v).strip()]
    unknown = sorted(set(wanted) - set(SCOPE_VALUES))
    if unknown:
        raise TokenScopesInvalidError(
            f"unknown token scope {', '.join(map(repr, unknown))}; "
            f"scopes are: {', '.join(SCOPE_VALUES)}"
        )
    if not wanted:
        raise TokenScopesInvalidError(f"name at least one scope of: {', '.join(SCOPE_VALUES)}")
    return tuple(s for s in SCOPE_VALUES if s in wanted)


@dataclass(frozen=True, slots=True)
class TokenState:
    """What the console knows of one token when it is presented."""

    public_id: str
    scopes: tuple[str, ...]
    revoked_at: datetime | None
    expires_at: datetime | None
    rotated_at: datetime | None
    agent_active: bool


@dataclass(frozen=True, slots=True)
class TokenRefusal:
    status: int  # 401: the token is not (or no longer) good; 403: good, but not for this
    code: str
    reason: str
    outcome: str  # revoked | expired | rotated | agent_inactive | out_of_scope


def _at(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat()


def token_refusal(state: TokenState, *, scope: Scope, now: datetime) -> TokenRefusal | None:
    """None when the token may be used for ``scope`` at ``now``; otherwise why not."""
    token = f"the agent token {state.public_id}"
    if state.revoked_at is not None:
        return TokenRefusal(
            401, "unauthenticated", f"{token} was revoked at {_at(state.revoked_at)}", "revoked"
        )
    if state.expires_at is not None and state.expires_at <= now:
        if state.rotated_at is not None:
            return TokenRefusal(
                401,
                "unauthenticated",
                f"{token} was replaced by rotation at {_at(state.rotated_at)} and was valid "
                f"until {_at(state.expires_at)}; use the token that replaced it",
                "rotated",
            )
        return TokenRefusal(
            401,
            "unauthenticated",
            f"{token} expired at {_at(state.expires_at)}; an admin can issue a new one "
            "(the agent's page, or manage.py synthorg_agent token issue AGENT)",
            "expired",
        )
    if not state.agent_active:
        return TokenRefusal(401, "unauthenticated", f"{token} belongs to an inactive agent",
                            "agent_inactive")  # fmt: skip
    if scope.value not in state.scopes:
        return TokenRefusal(
            403,
            "forbidden",
            f"{token} may use {', '.join(state.scopes) or 'nothing'}; "
            f"{DOOR_OF_SCOPE[scope]} needs the {scope.value} scope",
            "out_of_scope",
        )
    return None
