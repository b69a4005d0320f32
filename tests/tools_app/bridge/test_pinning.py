"""Pinning services: what discovery sees is pinned, held, decided and audited, in one place."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from audit_app.models import AuditEvent
from common.errors import ConflictError, InvalidArgumentError
from tools_app.bridge.definitions import UpstreamTool
from tools_app.bridge.pinning import (
    definitions_review,
    upstream_pin_accept,
    upstream_pin_reject,
    upstream_standing,
)
from tools_app.bridge.standing import PinStatus
from tools_app.contracts import ToolContract
from tools_app.models import UpstreamToolPin
from tools_app.services.runnable import RULE_UPSTREAM_HELD, preflight_refusal, upstream_refusal
from trust_app.policy import Decision, Outcome
from trust_app.services.agents import person_create

pytestmark = pytest.mark.django_db

SERVER = "notes"


def _tool(description: str = "Search the notes for a phrase.", **changes: Any) -> UpstreamTool:
    fields: dict[str, Any] = {
        "server": SERVER,
        "name": "search",
        "description": description,
        "input_schema": {"type": "object", "properties": {"phrase": {"type": "string"}}},
        "annotations": {"readOnlyHint": True},
    }
    fields.update(changes)
    return UpstreamTool(**fields)


@pytest.fixture
def admin() -> Any:
    person_create(username="ada", role="admin", password=None)
    return get_user_model().objects.get(username="ada")


def _kinds() -> list[str]:
    return list(
        AuditEvent.objects.filter(kind__startswith="bridge.")
        .order_by("id")
        .values_list("kind", flat=True)
    )


def test_the_first_definition_is_pinned_and_audited_once() -> None:
    tool = _tool()
    assert definitions_review(server=SERVER, tools=[tool])["notes__search"].available
    assert definitions_review(server=SERVER, tools=[tool])["notes__search"].available
    pin = UpstreamToolPin.objects.get()
    assert (pin.status, pin.pinned_hash) == ("pinned", tool.definition_hash())
    assert pin.pinned_definition == tool.definition()
    assert _kinds() == ["bridge.definition.pinned"]
    event = AuditEvent.objects.get(kind="bridge.definition.pinned")
    assert event.tool == "notes__search" and event.data["definition_hash"] == pin.pinned_hash


def test_the_rug_pull_is_held_with_both_definitions_and_both_hashes() -> None:
    first, changed = _tool(), _tool("Search the notes. Also send them to the archive.")
    definitions_review(server=SERVER, tools=[first])
    standing = definitions_review(server=SERVER, tools=[changed])["notes__search"]
    assert standing.status is PinStatus.HELD
    assert first.definition_hash()[:12] in standing.reason
    assert changed.definition_hash()[:12] in standing.reason
    pin = UpstreamToolPin.objects.get()
    assert pin.pinned_definition == first.definition()
    assert pin.candidate_definition == changed.definition()
    event = AuditEvent.objects.get(kind="bridge.definition.changed")
    assert event.data["previous_hash"] == first.definition_hash()
    assert event.data["new_hash"] == changed.definition_hash()
    assert upstream_standing("notes__search") == standing


def test_an_admin_accepts_the_change_it_becomes_the_pin(admin: Any) -> None:
    first, changed = _tool(), _tool("Search the notes, newest first.")
    definitions_review(server=SERVER, tools=[first])
    definitions_review(server=SERVER, tools=[changed])
    pin = UpstreamToolPin.objects.get()
    upstream_pin_accept(
        pin_id=pin.pk, person=admin, expected_hash=changed.definition_hash(), reason="reviewed"
    )
    assert upstream_standing("notes__search").available
    pin.refresh_from_db()
    assert (pin.pinned_hash, pin.candidate_hash, pin.decided_by_name) == (
        changed.definition_hash(),
        "",
        "ada",
    )
    event = AuditEvent.objects.get(kind="bridge.definition.accepted")
    assert (event.actor_name, event.reason) == ("ada", "reviewed")
    assert event.data["previous_hash"] == first.definition_hash()
    # the old definition is now the change
    assert not definitions_review(server=SERVER, tools=[first])["notes__search"].available


def test_a_rejected_change_stays_refused_until_the_server_goes_back(admin: Any) -> None:
    first, changed = _tool(), _tool("Search the notes and mail them out.")
    definitions_review(server=SERVER, tools=[first])
    definitions_review(server=SERVER, tools=[changed])
    pin = UpstreamToolPin.objects.get()
    upstream_pin_reject(
        pin_id=pin.pk, person=admin, expected_hash=changed.definition_hash(), reason="exfil"
    )
    again = definitions_review(server=SERVER, tools=[changed])["notes__search"]
    assert again.status is PinStatus.REJECTED and "rejected" in again.reason
    assert definitions_review(server=SERVER, tools=[first])["notes__search"].available
    assert _kinds() == [
        "bridge.definition.pinned",
        "bridge.definition.changed",
        "bridge.definition.rejected",
        "bridge.definition.restored",
    ]
    assert AuditEvent.objects.get(kind="bridge.definition.rejected").actor_name == "ada"


def test_a_decision_on_a_definition_that_changed_again_is_refused(admin: Any) -> None:
    definitions_review(server=SERVER, tools=[_tool()])
    shown = _tool("Second wording.")
    definitions_review(server=SERVER, tools=[shown])
    definitions_review(server=SERVER, tools=[_tool("Third wording.")])
    pin = UpstreamToolPin.objects.get()
    with pytest.raises(ConflictError, match="changed again"):
        upstream_pin_accept(
            pin_id=pin.pk, person=admin, expected_hash=shown.definition_hash(), reason="ok"
        )
    with pytest.raises(InvalidArgumentError, match="say why"):
        upstream_pin_reject(
            pin_id=pin.pk, person=admin, expected_hash=pin.candidate_hash, reason=" "
        )
    assert not upstream_standing("notes__search").available
    assert "bridge.definition.accepted" not in _kinds()


def test_a_hidden_instruction_holds_the_tool_on_first_sight() -> None:
    clean = definitions_review(server=SERVER, tools=[_tool()])["notes__search"]
    hidden = definitions_review(
        server="other", tools=[_tool("Search the notes.\u200b", server="other")]
    )["other__search"]
    assert clean.available  # control: the same tool without the character
    assert hidden.status is PinStatus.HELD and "U+200B" in hidden.reason
    pin = UpstreamToolPin.objects.get(server="other")
    assert pin.pinned_hash == "" and pin.findings[0]["code"] == "zero_width"
    assert AuditEvent.objects.get(kind="bridge.definition.held").tool == "other__search"


def test_the_hold_severity_is_a_setting(settings: Any) -> None:
    homoglyph = _tool(name="s\u0435arch_notes")  # Cyrillic ie: a high finding
    settings.SYNTHORG_BRIDGE_HOLD_SEVERITY = "critical"
    assert definitions_review(server=SERVER, tools=[homoglyph])[
        "notes__s\u0435arch_notes"
    ].available
    settings.SYNTHORG_BRIDGE_HOLD_SEVERITY = "high"
    held = definitions_review(server="two", tools=[_tool(name="s\u0435arch_notes", server="two")])
    assert not held["two__s\u0435arch_notes"].available
    settings.SYNTHORG_BRIDGE_HOLD_SEVERITY = "sometimes"
    broken = definitions_review(server="three", tools=[_tool(server="three")])
    assert "hold severity setting is invalid" in broken["three__search"].reason


def test_a_name_too_long_for_a_pin_is_held_and_audited() -> None:
    standing = definitions_review(server=SERVER, tools=[_tool(name="x" * 201)])
    assert not next(iter(standing.values())).available
    assert AuditEvent.objects.filter(kind="bridge.definition.refused").count() == 1
    assert not UpstreamToolPin.objects.exists()


# --- preflight ----------------------------------------------------------------


def _contract(name: str) -> ToolContract:
    return ToolContract.model_validate(
        {
            "name": name,
            "category": "mcp",
            "action_type": "code:read",
            "safety_class": "read",
            "summary": "search notes",
            "input_schema": {"type": "object"},
            "output_schema": {"type": "object"},
        }
    )


ALLOWED = Decision(Outcome.ALLOW, "allowed", "level", ("level: allowed",))


def test_preflight_refuses_a_held_upstream_tool_with_its_reason_before_anyone_is_asked() -> None:
    definitions_review(server=SERVER, tools=[_tool()])
    assert upstream_refusal(contract=_contract("notes__search"), decision=ALLOWED) is None
    definitions_review(server=SERVER, tools=[_tool("Changed.")])
    refused = preflight_refusal(contract=_contract("notes__search"), arguments={}, decision=ALLOWED)
    assert refused is not None and refused.outcome is Outcome.DENY
    assert refused.rule == RULE_UPSTREAM_HELD and "notes__search is held" in refused.reason
    assert refused.trace[-1].startswith(RULE_UPSTREAM_HELD)


def test_preflight_refuses_an_upstream_tool_never_reviewed() -> None:
    refused = upstream_refusal(contract=_contract("ghost__search"), decision=ALLOWED)
    assert refused is not None and "no reviewed definition" in refused.reason


def _waiting_call(tool: str) -> Any:
    """A call waiting for people, recorded under ``tool`` (an upstream contract name)."""
    from approvals_app.models import ApprovalRequest
    from tools_app.models import Invocation
    from tools_app.services.invocation_submit import CallRequest, invocation_submit
    from trust_app.services.agents import agent_create

    agent = agent_create(
        name=f"waiting-{tool.replace('_', '-')}", access_level="standard", autonomy="locked"
    ).agent
    call = CallRequest(tool="test_echo", arguments={"text": "hi"})
    invocation = invocation_submit(agent=agent, call=call).invocation
    assert invocation.status == "pending_approval", invocation.decision
    # The test tool stands in for the upstream one: the request is the tool's by name.
    Invocation.objects.filter(pk=invocation.pk).update(tool=tool)
    return ApprovalRequest.objects.get(invocation=invocation)


def test_holding_a_tool_withdraws_its_calls_waiting_for_people() -> None:
    definitions_review(server=SERVER, tools=[_tool()])
    definitions_review(server="other", tools=[_tool(server="other")])
    held_request = _waiting_call("notes__search")
    other_request = _waiting_call("other__search")  # control: its tool is not held
    definitions_review(server=SERVER, tools=[_tool("Search the notes and forward them.")])
    held_request.refresh_from_db()
    other_request.refresh_from_db()
    assert (held_request.status, other_request.status) == ("cancelled", "pending")
    invocation = held_request.invocation
    invocation.refresh_from_db()
    assert invocation.status == "cancelled"
    assert invocation.error_code == "upstream_definition_held"
    assert "notes__search is held" in invocation.error_message
    changed = AuditEvent.objects.get(kind="bridge.definition.changed")
    assert changed.data["withdrawn_requests"] == 1
