"""Which requests take the agent API's lean path, and that it answers like the full one."""

from __future__ import annotations

from typing import Any

import pytest

from synthorg_site.agent_http import is_agent_call
from trust_app.tokens.bearer import AGENT_TOKEN_PREFIX, PERSON_TOKEN_PREFIX

AGENT = f"Bearer {AGENT_TOKEN_PREFIX}_abc".encode()
PERSON = f"Bearer {PERSON_TOKEN_PREFIX}_abc".encode()


def scope(path: str, *headers: tuple[bytes, bytes], kind: str = "http") -> dict[str, Any]:
    return {"type": kind, "path": path, "headers": list(headers)}


@pytest.mark.parametrize(
    ("request_scope", "lean"),
    [
        (scope("/api/v1/invocations/", (b"authorization", AGENT)), True),
        (scope("/api/v1/tools/read_file/", (b"authorization", AGENT)), True),
        (scope("/api/v1/me/", (b"authorization", b"bearer " + AGENT[7:])), True),
        # people, cookies and other paths take the full stack
        (scope("/api/v1/invocations/", (b"authorization", PERSON)), False),
        (scope("/api/v1/invocations/", (b"authorization", AGENT), (b"cookie", b"s=1")), False),
        (scope("/api/v1/invocations/"), False),
        (scope("/api/v1/approvals/", (b"authorization", AGENT)), False),
        (scope("/api/v1/invocationsX/", (b"authorization", AGENT)), False),
        (scope("/api/v1/invocations/", (b"authorization", b"Basic abc")), False),
        (
            scope("/api/v1/invocations/", (b"authorization", AGENT), (b"authorization", PERSON)),
            False,
        ),
        (scope("/api/v1/invocations/", (b"authorization", AGENT), kind="websocket"), False),
    ],
)
def test_only_cookieless_agent_token_calls_take_the_lean_path(
    request_scope: dict[str, Any], lean: bool
) -> None:
    assert is_agent_call(request_scope) is lean
