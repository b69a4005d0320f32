"""The tool registry page: everyone signed in reads it; admins switch tools, audited."""

from __future__ import annotations

import pytest
from django.test import Client

from audit_app.models import AuditEvent
from tests.common.permission_suite import ADMINS, EVERYONE, PermissionSuite, signed_in
from tools_app.models import ToolDefinition
from tools_app.registry import tool_catalog
from trust_app.services.agents import person_create

pytestmark = pytest.mark.django_db


class TestToolListAccess(PermissionSuite):
    path = "/tools/"
    allowed = EVERYONE


class TestToolSwitchAccess(PermissionSuite):
    path = "/tools/{tool}/switch/"
    allowed = ADMINS
    method = "post"
    data = {"enabled": "0", "reason": "suite"}
    ok_status = 302


@pytest.fixture
def admin() -> Client:
    person_create(username="ada", role="admin", password=None)
    return signed_in("ada")


def test_every_tool_is_listed_with_its_contract_and_backend(admin: Client) -> None:
    html = admin.get("/tools/").content.decode()
    for contract in tool_catalog():
        assert f'data-tool="{contract.name}"' in html
    read_file = tool_catalog().contract("read_file")
    assert read_file is not None
    row = html.split('data-tool="read_file"')[1].split("</tr>")[0]
    assert read_file.definition_hash in row
    assert "file_system" in row and read_file.resolved_action_type in row
    assert "L2 (definition)" in row and "input_schema" in row


def test_an_auditor_reads_without_switches() -> None:
    person_create(username="audrey", role="auditor", password=None)
    html = signed_in("audrey").get("/tools/").content.decode()
    assert 'data-tool="read_file"' in html
    assert "/switch/" not in html
    assert "/tools/upstream/" not in html  # the review of upstream tools is for admins


def test_an_admin_finds_the_upstream_review_from_the_tools_page(admin: Client) -> None:
    assert 'href="/tools/upstream/"' in admin.get("/tools/").content.decode()


def test_an_admin_disables_and_enables_a_tool_with_an_audit_row(admin: Client) -> None:
    response = admin.post("/tools/read_file/switch/", {"enabled": "0", "reason": "leaks"})
    assert response.status_code == 302
    assert ToolDefinition.objects.get(name="read_file").enabled is False
    event = AuditEvent.objects.filter(kind="tool.disabled", tool="read_file").get()
    assert (event.actor_name, event.reason) == ("ada", "leaks")
    html = admin.get("/tools/").content.decode()
    assert "disabled" in html.split('data-tool="read_file"')[1].split("</tr>")[0]
    admin.post("/tools/read_file/switch/", {"enabled": "1"})
    assert ToolDefinition.objects.get(name="read_file").enabled is True
    assert AuditEvent.objects.filter(kind="tool.enabled", tool="read_file").count() == 1


def test_switching_an_unknown_tool_is_404(admin: Client) -> None:
    assert admin.post("/tools/no_such_tool/switch/", {"enabled": "0"}).status_code == 404


def row_of(html: str, tool: str) -> str:
    return html.split(f'data-tool="{tool}"')[1].split("</tr>")[0]


def test_a_disabled_tool_says_who_disabled_it_when_and_why(admin: Client) -> None:
    admin.post("/tools/read_file/switch/", {"enabled": "0", "reason": "first look"})
    admin.post("/tools/read_file/switch/", {"enabled": "1", "reason": ""})
    person_create(username="bea", role="admin", password=None)
    signed_in("bea").post("/tools/read_file/switch/", {"enabled": "0", "reason": "leaks <notes>"})
    person_create(username="audrey", role="auditor", password=None)
    row = row_of(signed_in("audrey").get("/tools/").content.decode(), "read_file")
    # The latest disabling counts, escaped; everyone who reads the page sees it.
    assert 'class="disabled-by"' in row and "by bea" in row and "leaks &lt;notes&gt;" in row
    assert "first look" not in row and "by ada" not in row
    # Enabled again, the row no longer speaks of it.
    admin.post("/tools/read_file/switch/", {"enabled": "1"})
    assert "disabled-by" not in row_of(admin.get("/tools/").content.decode(), "read_file")


def test_disabling_without_a_reason_is_refused_and_audited(admin: Client) -> None:
    # Attack on a silent switch: no reason (or only spaces) disables nothing.
    for reason in ("", "   "):
        response = admin.post("/tools/read_file/switch/", {"enabled": "0", "reason": reason})
        assert response.status_code == 302 and response["Location"] == "/tools/#tool-read_file"
    assert ToolDefinition.objects.get(name="read_file").enabled is True
    assert not AuditEvent.objects.filter(kind="tool.disabled").exists()
    refused = AuditEvent.objects.filter(kind="tool.disable_refused", tool="read_file")
    assert refused.count() == 2 and refused.first().actor_name == "ada"  # type: ignore[union-attr]
    page = admin.get("/tools/").content.decode()
    assert "read_file was not disabled: a reason is needed" in page
    # Positive control: with a reason the same switch works.
    admin.post("/tools/read_file/switch/", {"enabled": "0", "reason": "audit finding"})
    assert ToolDefinition.objects.get(name="read_file").enabled is False


def test_enabled_tools_get_a_quiet_disclosure_not_a_red_button(admin: Client) -> None:
    row = row_of(admin.get("/tools/").content.decode(), "read_file")
    assert '<details class="tool-switch"' in row and "<summary>Disable…</summary>" in row
    assert 'name="reason" required' in row
