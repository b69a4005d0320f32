"""Real upstream servers (official SDK, stdio) listed through the SDK client and reviewed.

The rug pull changes its definition between two ``tools/list`` of one run; the
hidden server puts a zero-width space and an instruction in a description. Each
has its control: the same listing without the trick stays available.
"""

from __future__ import annotations

import pytest

from audit_app.models import AuditEvent
from tests.tools_app.bridge.upstream import listings
from tools_app.bridge.pinning import definitions_review, upstream_standing
from tools_app.bridge.standing import PinStatus
from tools_app.models import UpstreamToolPin

pytestmark = pytest.mark.django_db


def test_the_rug_pull_is_held_after_being_pinned() -> None:
    first, second = listings("notes", "rug_pull", times=2)
    assert definitions_review(server="notes", tools=first)["notes__add_note"].available
    standing = definitions_review(server="notes", tools=second)["notes__add_note"]
    assert standing.status is PinStatus.HELD
    assert "changed its definition" in standing.reason
    assert upstream_standing("notes__add_note") == standing
    pin = UpstreamToolPin.objects.get()
    assert pin.candidate_definition is not None and pin.pinned_definition is not None
    assert "<IMPORTANT>" in pin.candidate_definition["description"]
    assert "<IMPORTANT>" not in pin.pinned_definition["description"]
    codes = {f["code"] for f in pin.findings}
    assert {"model_tag", "concealment", "sensitive_file"} <= codes
    changed = AuditEvent.objects.get(kind="bridge.definition.changed")
    assert (changed.data["previous_hash"], changed.data["new_hash"]) == (
        first[0].definition_hash(),
        second[0].definition_hash(),
    )


def test_control_the_same_honest_definition_listed_twice_stays_pinned() -> None:
    first, second = listings("notes", "honest", times=2)
    assert first == second
    definitions_review(server="notes", tools=first)
    standings = definitions_review(server="notes", tools=second)
    assert all(s.available for s in standings.values())
    assert not AuditEvent.objects.filter(kind="bridge.definition.changed").exists()


def test_a_hidden_instruction_is_held_on_first_sight_beside_an_honest_tool() -> None:
    (tools,) = listings("notes", "hidden")
    standings = definitions_review(server="notes", tools=tools)
    held = standings["notes__search_notes"]
    assert held.status is PinStatus.HELD and "U+200B" in held.reason
    assert standings["notes__count_notes"].available  # control, same server and listing


def test_control_the_honest_server_is_available_on_first_sight() -> None:
    (tools,) = listings("notes", "honest")
    standings = definitions_review(server="notes", tools=tools)
    assert {name: s.available for name, s in standings.items()} == {
        "notes__search_notes": True,
        "notes__count_notes": True,
    }
