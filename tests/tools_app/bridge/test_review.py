"""The pin's rule, step by step: first sight pins, a change holds, decisions and going back."""

from __future__ import annotations

from tools_app.bridge.review import PinEvent, PinState, review_definition, standing_reason
from tools_app.bridge.scan import Finding, Severity
from tools_app.bridge.standing import (
    HELD_CODE,
    PinStatus,
    Standing,
    refusal_before_call,
    shown_to_agents,
)

FLAG = Finding(Severity.CRITICAL, "zero_width", "description", "description hides U+200B")


def test_first_sight_pins_a_clean_definition() -> None:
    result = review_definition(None, seen_hash="a", blocking=[])
    assert result == review_definition(None, seen_hash="a", blocking=())
    assert result.state == PinState(PinStatus.PINNED, "a", "")
    assert result.event is PinEvent.PINNED


def test_first_sight_holds_a_flagged_definition_with_nothing_pinned() -> None:
    result = review_definition(None, seen_hash="a", blocking=[FLAG])
    assert result.state == PinState(PinStatus.HELD, "", "a")
    assert result.event is PinEvent.HELD


def test_the_same_definition_again_changes_nothing() -> None:
    pinned = PinState(PinStatus.PINNED, "a", "")
    assert review_definition(pinned, seen_hash="a", blocking=[]).event is None


def test_a_changed_definition_is_held_beside_the_pinned_one() -> None:
    pinned = PinState(PinStatus.PINNED, "a", "")
    result = review_definition(pinned, seen_hash="b", blocking=[])
    assert result.state == PinState(PinStatus.HELD, "a", "b")
    assert result.event is PinEvent.CHANGED
    # seen again while held: still held, nothing new to record
    assert review_definition(result.state, seen_hash="b", blocking=[]).event is None


def test_a_rejected_definition_stays_refused_until_the_server_goes_back() -> None:
    rejected = PinState(PinStatus.REJECTED, "a", "b")
    assert review_definition(rejected, seen_hash="b", blocking=[]).state == rejected
    back = review_definition(rejected, seen_hash="a", blocking=[])
    assert back.state == PinState(PinStatus.PINNED, "a", "")
    assert back.event is PinEvent.RESTORED
    other = review_definition(rejected, seen_hash="c", blocking=[])
    assert other.state == PinState(PinStatus.HELD, "a", "c")


def test_an_automatic_pin_flagged_by_a_stricter_scan_is_held_an_accepted_one_is_not() -> None:
    automatic = PinState(PinStatus.PINNED, "a", "")
    assert review_definition(automatic, seen_hash="a", blocking=[FLAG]).state.status is (
        PinStatus.HELD
    )
    accepted = PinState(PinStatus.PINNED, "a", "", accepted_by_person=True)
    assert review_definition(accepted, seen_hash="a", blocking=[FLAG]).event is None


def test_the_reasons_name_the_tool_the_hashes_and_where_to_decide() -> None:
    held = standing_reason(
        contract_name="notes__search",
        state=PinState(PinStatus.HELD, "a" * 64, "b" * 64),
        findings=[FLAG],
        review_path="/tools/upstream/",
    )
    assert not held.available
    assert "notes__search is held" in held.reason and "/tools/upstream/" in held.reason
    assert "a" * 12 in held.reason and "b" * 12 in held.reason and "U+200B" in held.reason
    rejected = standing_reason(
        contract_name="notes__search",
        state=PinState(PinStatus.REJECTED, "a" * 64, "b" * 64),
        findings=[],
        review_path="/tools/upstream/",
    )
    assert "rejected" in rejected.reason and "goes back" in rejected.reason
    pinned = standing_reason(
        contract_name="notes__search",
        state=PinState(PinStatus.PINNED, "a", ""),
        findings=[],
        review_path="/tools/upstream/",
    )
    assert pinned.available and pinned.reason == ""


def test_agents_are_shown_a_tool_only_on_its_pinned_definition() -> None:
    assert shown_to_agents(status="pinned", pinned_hash="a", recorded_hash="a")  # control
    assert not shown_to_agents(status="held", pinned_hash="a", recorded_hash="a")
    assert not shown_to_agents(status="rejected", pinned_hash="a", recorded_hash="b")
    assert not shown_to_agents(status="held", pinned_hash="", recorded_hash="a"), "first sight"
    assert not shown_to_agents(status="pinned", pinned_hash="a", recorded_hash="b")
    assert not shown_to_agents(status="", pinned_hash="", recorded_hash=""), "never reviewed"


def test_a_call_not_sent_says_why_in_the_pins_words() -> None:
    held = standing_reason(
        contract_name="notes__add",
        state=PinState(PinStatus.HELD, "a" * 64, "b" * 64),
        findings=[FLAG],
        review_path="/tools/upstream/",
    )
    refusal = refusal_before_call(
        contract_name="notes__add", server="notes", listed=True, standing=held
    )
    assert refusal.code == HELD_CODE == "upstream_definition_held"
    assert refusal.reason.startswith("notes__add is held") and "not run" in refusal.reason
    gone = refusal_before_call(
        contract_name="notes__add", server="notes", listed=False, standing=held
    )
    assert gone.code == "upstream_unavailable" and "no longer lists" in gone.reason
    stale = refusal_before_call(
        contract_name="notes__add", server="notes", listed=True, standing=Standing.pinned()
    )
    assert stale.code == "definition_changed"
