"""PURE: what seeing a definition does to an upstream tool's pin (the rug-pull rule).

The first definition seen is pinned, unless the scan finds something at or above
the hold severity: then it is held on first sight. A later definition with
another hash is held beside the pinned one until an admin accepts it (a new pin)
or rejects it (refused until the server goes back to the pinned definition).
Going back to the pinned definition makes the tool available again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from tools_app.bridge.scan import Finding
from tools_app.bridge.standing import PinStatus, Standing


class PinEvent(StrEnum):
    """What a review changed; each is one audit event kind ``bridge.definition.<event>``."""

    PINNED = "pinned"  # first sight, nothing found: pinned
    HELD = "held"  # first sight (or never accepted), findings hold it
    CHANGED = "changed"  # differs from the pinned definition: held for review
    RESTORED = "restored"  # the server went back to the pinned definition


@dataclass(frozen=True)
class PinState:
    status: PinStatus
    pinned_hash: str  # the accepted definition; "" while none was ever accepted
    candidate_hash: str  # the definition waiting for (or refused by) an admin; "" if none
    accepted_by_person: bool = False  # the pinned definition was accepted despite findings


@dataclass(frozen=True)
class Review:
    state: PinState
    event: PinEvent | None  # None: nothing changed


def review_definition(
    previous: PinState | None, *, seen_hash: str, blocking: Sequence[Finding]
) -> Review:
    """The pin after seeing a definition with ``seen_hash`` and these blocking findings."""
    if previous is None:
        if blocking:
            return Review(PinState(PinStatus.HELD, "", seen_hash), PinEvent.HELD)
        return Review(PinState(PinStatus.PINNED, seen_hash, ""), PinEvent.PINNED)

    if seen_hash == previous.pinned_hash:
        if blocking and not previous.accepted_by_person:
            # Pinned automatically, but the scan now holds it (a stricter hold severity).
            if previous.status is PinStatus.HELD and previous.candidate_hash == seen_hash:
                return Review(previous, None)
            return Review(PinState(PinStatus.HELD, previous.pinned_hash, seen_hash), PinEvent.HELD)
        if previous.status is PinStatus.PINNED and not previous.candidate_hash:
            return Review(previous, None)
        restored = PinState(PinStatus.PINNED, previous.pinned_hash, "", previous.accepted_by_person)
        return Review(restored, PinEvent.RESTORED)

    if seen_hash == previous.candidate_hash and previous.status is not PinStatus.PINNED:
        return Review(previous, None)  # still waiting, or still rejected
    event = PinEvent.CHANGED if previous.pinned_hash else PinEvent.HELD
    held = PinState(PinStatus.HELD, previous.pinned_hash, seen_hash, previous.accepted_by_person)
    return Review(held, event)


def standing_reason(
    *,
    contract_name: str,
    state: PinState,
    findings: Sequence[Finding],
    review_path: str,
) -> Standing:
    """The standing of a tool in ``state``, with the reason in words an agent can act on."""
    if state.status is PinStatus.PINNED:
        return Standing.pinned()
    worst = (
        f" The scan found: {findings[0].reason} ({findings[0].severity.label})." if findings else ""
    )
    if state.status is PinStatus.REJECTED:
        return Standing(
            PinStatus.REJECTED,
            f"{contract_name} is refused: an admin rejected the definition its server now "
            f"gives (hash {state.candidate_hash[:12]}); it stays refused until the server goes "
            f"back to the definition that was pinned.{worst}",
        )
    if state.pinned_hash:
        why = (
            f"its server changed its definition (pinned hash {state.pinned_hash[:12]}, now "
            f"{state.candidate_hash[:12]})"
            if state.candidate_hash != state.pinned_hash
            else "the scan of its definition found something that holds it"
        )
    else:
        why = "its first definition was held by the scan"
    return Standing(
        PinStatus.HELD,
        f"{contract_name} is held: {why}, and an admin must accept or reject it at "
        f"{review_path} before it can be called.{worst}",
    )
