"""Reads of upstream tool pins for the admins' review page and the operators' inbox."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools_app.bridge.diff import DiffLine, definition_diff, readable_definition
from tools_app.bridge.pinning import pin_standing
from tools_app.models import UpstreamToolPin

_WAITING = (UpstreamToolPin.Status.HELD, UpstreamToolPin.Status.REJECTED)


@dataclass(frozen=True)
class PinReview:
    """One upstream tool as the review page shows it."""

    pin: UpstreamToolPin
    reason: str
    diff: list[DiffLine]
    definition: str  # the definition that is (or would be) pinned, readable
    findings: list[dict[str, Any]]

    @property
    def waiting(self) -> bool:
        return self.pin.status == UpstreamToolPin.Status.HELD


def upstream_pins_for_review() -> list[PinReview]:
    """Held and rejected upstream tools first, then pinned ones with findings."""
    pins = list(UpstreamToolPin.objects.filter(status__in=_WAITING)) + [
        p
        for p in UpstreamToolPin.objects.filter(status=UpstreamToolPin.Status.PINNED)
        if p.findings
    ]
    reviews = []
    for pin in pins:
        shown = pin.candidate_definition if pin.candidate_hash else pin.pinned_definition
        reviews.append(
            PinReview(
                pin=pin,
                reason=pin_standing(pin, pin.contract_name).reason,
                diff=definition_diff(pin.pinned_definition, pin.candidate_definition)
                if pin.candidate_hash and pin.pinned_definition is not None
                else [],
                definition=readable_definition(shown),
                findings=list(pin.findings),
            )
        )
    return reviews


def held_upstream_tools() -> list[str]:
    """Contract names of upstream tools held for an admin's review."""
    return list(
        UpstreamToolPin.objects.filter(status=UpstreamToolPin.Status.HELD).values_list(
            "contract_name", flat=True
        )
    )
