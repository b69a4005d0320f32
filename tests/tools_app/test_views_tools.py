"""The tool registry page: everyone signed in reads it; admins switch tools, audited."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.common.permission_suite import ADMINS, EVERYONE, PermissionSuite, signed_in
from tools_app.models import AuditEvent, ToolDefinition
from tools_app.registry import tool_catalog
from trust_app.services import person_create

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
