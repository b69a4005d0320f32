"""Agent pages: who sees them, the filtered list, edits with preview and audit, tokens, explain."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from tests.common.permission_suite import ADMINS, DECIDERS, PermissionSuite, signed_in
from tools_app.models import Invocation
from trust_app.models import Agent, AgentPermissions, AgentToken
from trust_app.services.agents import agent_create, person_create
from trust_app.tokens.bearer import token_digest

pytestmark = pytest.mark.django_db


class TestAgentListAccess(PermissionSuite):
    path = "/agents/"
    allowed = DECIDERS


class TestAgentDetailAccess(PermissionSuite):
    path = "/agents/{agent}/"
    allowed = DECIDERS


class TestAgentEditAccess(PermissionSuite):
    path = "/agents/{agent}/edit/"
    allowed = ADMINS
    method = "post"
    data = {"access_level": "restricted", "autonomy": "semi", "action": "save"}
    ok_status = 302


class TestAgentExplainAccess(PermissionSuite):
    path = "/agents/{agent}/explain/"
    allowed = ADMINS
    method = "post"
    data = {"tool": "read_file", "arguments": '{"path": "notes.txt"}'}


class TestAgentTokenCreateAccess(PermissionSuite):
    path = "/agents/{agent}/tokens/"
    allowed = ADMINS
    method = "post"
    ok_status = 302  # to the page that shows the new token once


class TestAgentTokenRevokeAccess(PermissionSuite):
    path = "/agents/{agent}/tokens/{token}/revoke/"
    allowed = ADMINS
    method = "post"
    ok_status = 302


@pytest.fixture
def admin() -> Client:
    person_create(username="ada", role="admin", password=None)
    return signed_in("ada")


@pytest.fixture
def operator() -> Client:
    person_create(username="otto", role="operator", password=None)
    return signed_in("otto")


@pytest.fixture
def agent() -> Agent:
    return agent_create(name="worker-1", access_level="standard").agent


def edit(client: Client, agent: Agent, action: str = "save", **fields: Any) -> Any:
    data = {"access_level": agent.access_level, "autonomy": agent.autonomy, "action": action}
    data.update(fields)
    return client.post(f"/agents/{agent.id}/edit/", data)


def test_list_filters_by_search_level_autonomy_active_and_recent_denials(
    operator: Client,
) -> None:
    a = agent_create(name="scout", access_level="restricted", autonomy="supervised").agent
    agent_create(name="builder", access_level="standard")
    idle = agent_create(name="idle-one", access_level="standard").agent
    Agent.objects.filter(pk=idle.pk).update(active=False)
    Invocation.objects.create(
        agent=a, tool="http_request", category="web", action_type="net:http",
        safety_class="network", arguments_hash="0" * 64, status="denied",
    )  # fmt: skip

    def names(**params: str) -> list[str]:
        html = operator.get("/agents/", params).content.decode()
        return [n for n in ("builder", "idle-one", "scout") if f'data-agent="{n}"' in html]

    assert names() == ["builder", "idle-one", "scout"]
    assert names(q="SCO") == ["scout"]
    assert names(level="restricted") == ["scout"]
    assert names(autonomy="supervised") == ["scout"]
    assert names(active="no") == ["idle-one"]
    assert names(denials="on") == ["scout"]


def test_operators_read_without_edit_controls(operator: Client, agent: Agent) -> None:
    html = operator.get(f"/agents/{agent.id}/").content.decode()
    assert 'id="access-level">standard<' in html
    assert agent.workspace in html
    assert 'id="edit-form"' not in html and 'id="explain-form"' not in html
    assert "Revoke" not in html and 'id="create-token"' not in html


def test_preview_shows_what_becomes_unreachable_and_writes_nothing(
    admin: Client, agent: Agent
) -> None:
    before = AuditEvent.objects.count()
    response = edit(admin, agent, action="preview", access_level="restricted")
    html = response.content.decode()
    assert response.status_code == 200
    unreachable = html.split('id="unreachable">')[1].split("</span>")[0]
    assert "shell_command" in unreachable  # restricted has no terminal category
    assert 'id="save"' in html
    agent.refresh_from_db()
    assert agent.access_level == "standard"
    assert AuditEvent.objects.count() == before


def test_saving_an_edit_writes_one_audit_event_with_before_and_after(
    admin: Client, agent: Agent
) -> None:
    response = edit(
        admin,
        agent,
        access_level="restricted",
        autonomy="supervised",
        denied="read_file\nwrite_file",
        sub_constraints="network: allowlist_only\nallowed_hosts: ['api.example.com:443']",
    )
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.access_level, agent.autonomy) == ("restricted", "supervised")
    permissions = AgentPermissions.objects.get(agent=agent)
    assert permissions.denied == ["read_file", "write_file"]
    assert permissions.sub_constraints == {
        "network": "allowlist_only",
        "allowed_hosts": ["api.example.com:443"],
    }
    events = AuditEvent.objects.filter(kind="agent.permissions_updated", agent_id=agent.id)
    assert events.count() == 1
    event = events.get()
    assert event.actor_name == "ada" and event.actor_type == "person"
    assert event.data["before"]["access_level"] == "standard"
    assert event.data["before"]["denied"] == []
    assert event.data["after"]["access_level"] == "restricted"
    assert event.data["after"]["denied"] == ["read_file", "write_file"]
    assert "read_file" in event.data["unreachable"]
    # Saving the same again changes nothing and records nothing.
    same = '{"network": "allowlist_only", "allowed_hosts": ["api.example.com:443"]}'
    edit(admin, agent, access_level="restricted", autonomy="supervised",
         denied="read_file write_file", sub_constraints=same)  # fmt: skip
    assert events.count() == 1


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"allowed": "read_file\nlaunch_rockets"}, "allowed", ["'launch_rockets'", "read_file"]),
        ({"denied": "no_such_tool"}, "denied", ["'no_such_tool'", "allowed values", "git_push"]),
        ({"access_level": "godmode"}, "access_level", ["'godmode'", "sandboxed", "elevated"]),
        ({"autonomy": "yolo"}, "autonomy", ["'yolo'", "supervised"]),
        ({"sub_constraints": "requires_approval: [rocket:launch]"}, "sub_constraints",
         ["rocket:launch", "allowed", "code:read"]),
        ({"sub_constraints": "network: everywhere"}, "sub_constraints",
         ["'everywhere'", "allowlist_only"]),
        ({"sub_constraints": "netwrok: open"}, "sub_constraints", ["netwrok", "network"]),
        ({"allowed": "read_file", "denied": "read_file"}, "denied", ["both allowed and denied"]),
        ({"max_concurrent_calls": "0"}, "max_concurrent_calls", ["0 is not allowed", "1 to 10000"]),
        ({"max_concurrent_calls": "10001"}, "max_concurrent_calls",
         ["10001 is not allowed", "1 to 10000", "console default"]),
        ({"max_concurrent_calls": "many"}, "max_concurrent_calls", ["whole number"]),
    ],
)  # fmt: skip
def test_a_bad_edit_is_refused_with_the_allowed_values(
    admin: Client, agent: Agent, fields: dict[str, str], field: str, words: list[str]
) -> None:
    before = AuditEvent.objects.count()
    response = edit(admin, agent, **fields)
    assert response.status_code == 400
    html = response.content.decode()
    errors = html.split(f'data-field="{field}">')
    assert len(errors) > 1, f"no error shown for {field}"
    message = errors[1].split("</div>")[0].replace("&#x27;", "'")
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    agent.refresh_from_db()
    assert agent.access_level == "standard"
    assert AuditEvent.objects.count() == before


def test_token_is_shown_once_and_stored_as_a_digest(admin: Client, agent: Agent) -> None:
    response = admin.post(f"/agents/{agent.id}/tokens/", {"label": "ci"})
    assert response.status_code == 302
    shown = admin.get(response["Location"])
    assert shown.status_code == 200 and shown["Cache-Control"] == "no-store"
    html = shown.content.decode()
    plaintext = html.split('id="new-token">')[1].split("</pre>")[0]
    token = AgentToken.objects.get(agent=agent, label="ci")
    assert token.digest == token_digest(plaintext)
    assert plaintext not in admin.get(f"/agents/{agent.id}/").content.decode()
    assert AuditEvent.objects.filter(kind="agent.token_issued", agent_id=agent.id).exists()


def test_revoking_a_token_audits_it(admin: Client, agent: Agent) -> None:
    token = AgentToken.objects.get(agent=agent)
    response = admin.post(
        f"/agents/{agent.id}/tokens/{token.id}/revoke/", {"confirm": token.public_id}
    )
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert AuditEvent.objects.filter(kind="agent.token_revoked", agent_id=agent.id).exists()


def test_revoke_is_apart_from_rotate_and_takes_a_confirmation(admin: Client, agent: Agent) -> None:
    token = AgentToken.objects.get(agent=agent)
    html = admin.get(f"/agents/{agent.id}/").content.decode()
    row = html.split(f'<tr data-token="{token.public_id}">')[1].split("</tr>")[0]
    rotate_cell = row.split("data-rotate=")[1].split("</td>")[0]
    assert "revoke" not in rotate_cell.lower()  # not under Rotate: a cell of its own
    revoke = row.split('<details class="token-revoke">')[1].split("</details>")[0]
    assert f'name="confirm" value="{token.public_id}" required' in revoke
    url = f"/agents/{agent.id}/tokens/{token.id}/revoke/"
    for unconfirmed in ({}, {"confirm": "on"}, {"confirm": "tok_other"}):
        page = admin.post(url, unconfirmed, follow=True).content.decode()
        assert "was not revoked: tick the box" in page
        token.refresh_from_db()
        assert token.revoked_at is None
    assert not AuditEvent.objects.filter(kind="agent.token_revoked").exists()
    # Control: confirmed, it is revoked.
    admin.post(url, {"confirm": token.public_id})
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_try_a_call_shows_the_decision_and_trace_and_runs_nothing(
    admin: Client, agent: Agent
) -> None:
    before = (AuditEvent.objects.count(), Invocation.objects.count())
    response = admin.post(
        f"/agents/{agent.id}/explain/",
        {"tool": "read_file", "arguments": '{"path": "/etc/shadow"}'},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section class="card" id="explain">')
    assert 'class="decision decision-deny"' in html
    assert '<ol class="trace"><li>' in html
    allowed = admin.post(
        f"/agents/{agent.id}/explain/", {"tool": "read_file", "arguments": '{"path": "a.txt"}'}
    ).content.decode()
    assert "decision-allow" in allowed
    unknown = admin.post(f"/agents/{agent.id}/explain/", {"tool": "nope", "arguments": "{}"})
    assert unknown.status_code == 400 and "unknown tool" in unknown.content.decode()
    assert (AuditEvent.objects.count(), Invocation.objects.count()) == before


def test_saving_from_the_htmx_panel_reloads_the_whole_page(admin: Client, agent: Agent) -> None:
    response = admin.post(
        f"/agents/{agent.id}/edit/",
        {"access_level": "restricted", "autonomy": "semi", "action": "save"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/agents/{agent.id}/"


def calls_at_once(html: str) -> str:
    return html.split('id="calls-at-once">')[1].split(" <span")[0]


def test_the_page_shows_the_cap_on_calls_at_once_and_its_field(
    admin: Client, operator: Client, agent: Agent, settings: Any
) -> None:
    settings.SYNTHORG_AGENT_MAX_CONCURRENT_CALLS = 7
    html = operator.get(f"/agents/{agent.id}/").content.decode()
    assert calls_at_once(html) == "7 (default)"
    assert 'name="max_concurrent_calls"' not in html  # operators read, admins edit

    html = admin.get(f"/agents/{agent.id}/").content.decode()
    field = html.split('for="id_max_concurrent_calls">')[1].split("</div>")[0]
    assert field.startswith("Calls at once</label>")
    assert 'name="max_concurrent_calls"' in field and 'value="' not in field  # blank
    assert "console default (7)" in field and "wait their turn, queued" in field

    Agent.objects.filter(pk=agent.pk).update(max_concurrent_calls=12)
    html = admin.get(f"/agents/{agent.id}/").content.decode()
    assert calls_at_once(html) == "12"
    field = html.split('for="id_max_concurrent_calls">')[1].split("</div>")[0]
    assert 'value="12"' in field


def test_saving_a_cap_writes_and_audits_it_and_blank_gives_back_the_default(
    admin: Client, agent: Agent
) -> None:
    preview = edit(admin, agent, action="preview", max_concurrent_calls="12").content.decode()
    assert "Changes: max_concurrent_calls" in preview
    agent.refresh_from_db()
    assert agent.max_concurrent_calls is None

    assert edit(admin, agent, max_concurrent_calls="12").status_code == 302
    agent.refresh_from_db()
    assert agent.max_concurrent_calls == 12
    events = AuditEvent.objects.filter(kind="agent.permissions_updated", agent_id=agent.id)
    event = events.get()
    assert event.actor_name == "ada" and event.reason == "changed: max_concurrent_calls"
    assert event.data["before"]["max_concurrent_calls"] is None
    assert event.data["after"]["max_concurrent_calls"] == 12

    assert edit(admin, agent, max_concurrent_calls="").status_code == 302
    agent.refresh_from_db()
    assert agent.max_concurrent_calls is None
    last = events.order_by("-id").first()
    assert last is not None and last.data["after"]["max_concurrent_calls"] is None
    assert events.count() == 2
