"""The pure judgement of an agent token: revoked, expired, rotated out, inactive, scope."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from trust_app.tokens.life import (
    DEFAULT_SCOPES,
    Scope,
    TokenScopesInvalidError,
    TokenState,
    scopes_parse,
    token_refusal,
)

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def state(**changes: object) -> TokenState:
    fields: dict[str, object] = {
        "public_id": "abcd1234",
        "scopes": DEFAULT_SCOPES,
        "revoked_at": None,
        "expires_at": NOW + timedelta(days=1),
        "rotated_at": None,
        "agent_active": True,
    }
    fields.update(changes)
    return TokenState(**fields)  # type: ignore[arg-type]


def test_a_live_token_passes_at_its_doors() -> None:
    assert token_refusal(state(), scope=Scope.AGENT_API, now=NOW) is None
    assert token_refusal(state(), scope=Scope.MCP, now=NOW) is None
    assert token_refusal(state(expires_at=None), scope=Scope.MCP, now=NOW) is None


def test_one_second_past_expiry_is_refused_with_the_time() -> None:
    expires = NOW - timedelta(seconds=1)
    refusal = token_refusal(state(expires_at=expires), scope=Scope.AGENT_API, now=NOW)
    assert refusal is not None and refusal.status == 401 and refusal.outcome == "expired"
    assert "expired at 2026-11-24T11:59:59+00:00" in refusal.reason
    assert "abcd1234" in refusal.reason


def test_revocation_wins_over_everything() -> None:
    refusal = token_refusal(state(revoked_at=NOW), scope=Scope.AGENT_API, now=NOW)
    assert refusal is not None and refusal.outcome == "revoked" and refusal.status == 401


def test_a_rotated_token_passes_in_its_overlap_and_not_after() -> None:
    rotated = state(rotated_at=NOW - timedelta(minutes=5), expires_at=NOW + timedelta(minutes=1))
    assert token_refusal(rotated, scope=Scope.AGENT_API, now=NOW) is None
    later = NOW + timedelta(minutes=1)
    refusal = token_refusal(rotated, scope=Scope.AGENT_API, now=later)
    assert refusal is not None and refusal.outcome == "rotated"
    assert "use the token that replaced it" in refusal.reason


def test_an_inactive_agent_is_refused() -> None:
    refusal = token_refusal(state(agent_active=False), scope=Scope.MCP, now=NOW)
    assert refusal is not None and refusal.outcome == "agent_inactive"


@pytest.mark.parametrize(
    ("scopes", "door"),
    [(("mcp",), Scope.AGENT_API), (("agent_api",), Scope.MCP), (DEFAULT_SCOPES, Scope.METRICS)],
)
def test_a_door_outside_the_scopes_is_403_naming_the_scope(
    scopes: tuple[str, ...], door: Scope
) -> None:
    refusal = token_refusal(state(scopes=scopes), scope=door, now=NOW)
    assert refusal is not None and refusal.status == 403 and refusal.code == "forbidden"
    assert f"needs the {door.value} scope" in refusal.reason
    # Positive control: the same token at a door of its scopes.
    assert token_refusal(state(scopes=scopes), scope=Scope(scopes[0]), now=NOW) is None


def test_scopes_are_checked_and_put_in_order() -> None:
    assert scopes_parse(["metrics", " mcp "]) == ("mcp", "metrics")
    with pytest.raises(TokenScopesInvalidError, match="scopes are: agent_api, mcp, metrics"):
        scopes_parse(["admin"])
    with pytest.raises(TokenScopesInvalidError, match="at least one"):
        scopes_parse([""])
