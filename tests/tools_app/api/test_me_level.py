"""GET /api/v1/me/: ``trust.level`` is the level that applies, with the admin's level and why."""
# ruff: noqa: F811  (pytest fixtures imported from the support module)

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tests.trust_app.test_trust_support import trust_config  # noqa: F401
from trust_app.services.agents import agent_create

pytestmark = [pytest.mark.django_db]
WEIGHTED_FROM_SANDBOXED = "trust:\n  strategy: weighted\n  initial_level: sandboxed\n"
WEIGHTED_FROM_STANDARD = "trust:\n  strategy: weighted\n  initial_level: standard\n"
DISABLED = "trust:\n  strategy: disabled\n"


def _me(level: str) -> dict[str, Any]:
    created = agent_create(name=f"me-{uuid.uuid4().hex[:8]}", access_level=level)
    answer = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Bearer {created.token}")
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def test_trust_holding_an_elevated_agent_at_sandboxed_is_the_level_me_reports(
    trust_config: Callable[[str], None],
) -> None:
    trust_config(WEIGHTED_FROM_SANDBOXED)
    body = _me("elevated")
    assert body["access_level"] == "elevated"  # the admin's level, as before
    trust = body["trust"]
    assert (trust["level"], trust["admin_level"], trust["earned_level"]) == (
        "sandboxed",
        "elevated",
        "sandboxed",
    )
    assert trust["lowered"] is True and trust["strategy"] == "weighted"
    assert "trust holds it at sandboxed" in trust["reason"]


def test_trust_above_the_admins_level_leaves_the_admins_level(
    trust_config: Callable[[str], None],
) -> None:
    trust_config(WEIGHTED_FROM_STANDARD)
    trust = _me("restricted")["trust"]
    assert (trust["level"], trust["admin_level"], trust["lowered"]) == (
        "restricted",
        "restricted",
        False,
    )


def test_with_trust_off_the_admins_level_applies_and_me_says_why(
    trust_config: Callable[[str], None],
) -> None:
    trust_config(DISABLED)
    trust = _me("elevated")["trust"]
    assert (trust["level"], trust["earned_level"], trust["lowered"]) == ("elevated", None, False)
    assert "disabled" in trust["reason"]
