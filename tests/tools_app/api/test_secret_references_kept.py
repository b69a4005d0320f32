"""A secret reference, `${secret:NAME}`, names a secret and is not one: validation errors
and audit rows keep it as the agent wrote it, and show the agent's own input; secret
values (an agent's literal in a secret slot, a stored secret's value) stay hidden.

Through the real daphne: REST with httpx, MCP with raw JSON-RPC POSTs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from secrets_app.services import secret_grant, secret_set
from tests.secrets_app.test_http_secret import ADMIN
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import Invocation

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LITERAL = "hunter2-literal-value-9f3e"


def _name() -> str:
    return f"DEPLOY_{uuid.uuid4().hex[:8].upper()}"


def _refused_row(client: AgentClient) -> AuditEvent:
    return AuditEvent.objects.filter(agent_id=client.agent.id, kind="invocation.refused").latest(
        "id"
    )


def _error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "invalid_argument"
    return error


def test_a_bad_secret_env_name_is_shown_with_the_field_that_holds_it(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    reference = f"${{secret:{_name()}}}"
    response = client.call("shell_command", {"argv": ["ls"], "secret_env": {"bad-name": reference}})
    error = _error(response)
    assert "arguments.secret_env" in error["message"]
    assert "'bad-name' does not match" in error["message"], error
    assert "REDACTED" not in response.text
    assert error["details"]["problems"] == [error["message"]]
    row = _refused_row(client)
    assert row.reason == error["message"]
    assert row.data["arguments"]["secret_env"] == {"bad-name": reference}
    # Positive control: the agent's literal value in the same slot is a secret value:
    # named by its field, never shown, in the answer or the audit row.
    literal = client.call("shell_command", {"argv": ["ls"], "secret_env": {"TOKEN": LITERAL}})
    hidden = _error(literal)
    assert "arguments.secret_env.TOKEN" in hidden["message"]
    assert "[REDACTED:secret_value] does not match" in hidden["message"], hidden
    assert LITERAL not in literal.text
    row = _refused_row(client)
    assert LITERAL not in json.dumps(row.data) + row.reason
    assert row.data["arguments"]["secret_env"] == {"TOKEN": "[REDACTED:secret_value]"}


def test_a_reference_where_an_object_belongs_is_quoted_as_written(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    reference = f"${{secret:{_name()}}}"
    response = client.call("shell_command", {"argv": ["ls"], "secret_env": reference})
    error = _error(response)
    assert f"'{reference}' is not of type 'object'" in error["message"], error
    assert _refused_row(client).data["arguments"]["secret_env"] == reference
    # Positive control: the same reference in an object is accepted (granted), and the
    # recorded invocation and its audit row keep it as written.
    name = reference[len("${secret:") : -1]
    secret_set(name=name, value=LITERAL, actor=ADMIN)
    secret_grant(
        name=name, agent=client.agent, tool="shell_command", hosts=["api.example.com"], actor=ADMIN
    )
    accepted = client.call("shell_command", {"argv": ["ls"], "secret_env": {"TOKEN": reference}})
    assert accepted.status_code == 201, accepted.text
    assert LITERAL not in accepted.text
    invocation = Invocation.objects.get(id=accepted.json()["id"])
    assert invocation.arguments_redacted["secret_env"] == {"TOKEN": reference}
    rows = AuditEvent.objects.filter(invocation_id=invocation.id)
    assert rows.exists()
    for row in rows:
        assert LITERAL not in json.dumps(row.data) + row.reason
    recorded = [row.data["arguments"] for row in rows if "arguments" in row.data]
    assert recorded and all(a["secret_env"] == {"TOKEN": reference} for a in recorded)


def test_a_reference_outside_a_secret_slot_is_kept_in_the_refusal_and_its_audit_row(
    make_agent: Callable[..., AgentClient],
) -> None:
    client = make_agent()
    reference = f"${{secret:{_name()}}}"
    response = client.call("test_echo", {"text": f"token is {reference}"})
    error = _error(response)
    assert "arguments.text" in error["message"] and "secret" in error["message"]
    row = _refused_row(client)
    assert row.data["arguments"] == {"text": f"token is {reference}"}, row.data
    # Positive control: a credential-shaped value in the same field is still redacted.
    token = "ghp_" + "a1B2" * 9
    shaped = client.call("test_echo", {"text": [token, "plain words"]})
    shown = _error(shaped)
    assert "arguments.text: [" in shown["message"] and "'plain words'" in shown["message"]
    assert token not in shaped.text and "REDACTED" in shown["message"]
    assert token not in json.dumps(_refused_row(client).data)


def test_the_consoles_own_secret_is_never_shown_even_where_the_input_is(
    make_agent: Callable[..., AgentClient], test_env: dict[str, str]
) -> None:
    client = make_agent()
    # A secret-named variable of the web node's own environment (tests/conftest.py).
    value = test_env["SYNTHORG_TEST_DEPLOY_TOKEN"]
    response = client.call("shell_command", {"argv": f"ls {value}"})
    error = _error(response)
    assert "arguments.argv" in error["message"] and "is not of type 'array'" in error["message"]
    assert value not in response.text
    assert value not in json.dumps(_refused_row(client).data)
    # Positive control: the agent's input around the value is shown.
    assert "'ls [REDACTED:known_secret]'" in error["message"], error


def test_mcp_shows_the_same_validation_error(
    daphne_server: str, make_agent: Callable[..., AgentClient]
) -> None:
    client = make_agent()
    reference = f"${{secret:{_name()}}}"
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "shell_command",
            "arguments": {"argv": ["ls"], "secret_env": {"bad-name": reference}},
        },
    }
    headers = {
        "Authorization": f"Bearer {client.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    response = httpx.post(daphne_server + "/mcp/", json=message, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "arguments.secret_env" in text and "'bad-name' does not match" in text, text
    assert "REDACTED" not in text
    # Positive control: the same door serves the agent, and the tool it called names the
    # rule the name broke.
    listing = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}
    served = httpx.post(daphne_server + "/mcp/", json=listing, headers=headers, timeout=60)
    assert served.status_code == 200, served.text
    [tool] = [t for t in served.json()["result"]["tools"] if t["name"] == "shell_command"]
    names = tool["inputSchema"]["properties"]["secret_env"]["propertyNames"]["pattern"]
    assert names in text
