"""Configs with notification channels, and approval requests to notify about."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from approvals_app.models import ApprovalRequest
from tests.approvals_app.conftest import (  # noqa: F401 - fixtures
    approval_config,
    make_agent_row,
    make_person,
    submit,
)

SIGNING_KEY_ENV = "SYNTHORG_TEST_WEBHOOK_KEY"
SIGNING_KEY = "test-signing-key-0123456789abcdef"


@pytest.fixture
def channels(
    approval_config: Callable[[str], None],  # noqa: F811 - the imported fixture
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[..., None]:
    """Load a config whose ``notifications`` section holds these channels."""
    monkeypatch.setenv(SIGNING_KEY_ENV, SIGNING_KEY)

    def use(*entries: dict[str, Any], **section: Any) -> None:
        approval_config(json.dumps({"notifications": {"channels": list(entries), **section}}))

    return use


def webhook(url: str, **extra: Any) -> dict[str, Any]:
    return {"name": "hook", "type": "webhook", "url": url, "secret_env": SIGNING_KEY_ENV, **extra}


@pytest.fixture
def pending_request(
    make_agent_row: Callable[..., Any],  # noqa: F811 - the imported fixture
    submit: Callable[..., Any],  # noqa: F811
) -> Callable[..., ApprovalRequest]:
    """A locked agent's call, waiting for a person (risk low)."""

    def make(arguments: dict[str, Any] | None = None) -> ApprovalRequest:
        invocation = submit(make_agent_row(autonomy="locked"), arguments=arguments)
        return ApprovalRequest.objects.select_related("invocation__agent").get(
            invocation=invocation
        )

    return make
