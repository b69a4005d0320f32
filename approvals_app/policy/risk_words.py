"""PURE: the words of risk: tiers in order, one reason, and a label made of reasons."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

LOW: Final = "low"
MEDIUM: Final = "medium"
HIGH: Final = "high"
CRITICAL: Final = "critical"
TIERS: Final = (LOW, MEDIUM, HIGH, CRITICAL)


def rank(tier: str) -> int:
    """The tier's place, low first (an unknown tier counts as the most serious)."""
    return TIERS.index(tier) if tier in TIERS else len(TIERS) - 1


def most_serious(*tiers: str) -> str:
    return max(tiers, key=rank)


@dataclass(frozen=True, slots=True)
class RiskReason:
    """One thing the call does that bears on its risk, and the tier it alone would be."""

    tier: str
    text: str


@dataclass(frozen=True, slots=True)
class Risk:
    """A call's risk label: the most serious of its reasons, most serious first."""

    tier: str
    reasons: tuple[RiskReason, ...]

    @classmethod
    def of(cls, reasons: Iterable[RiskReason]) -> Risk:
        unique = list(dict.fromkeys(reasons))
        unique.sort(key=lambda reason: -rank(reason.tier))
        tier = unique[0].tier if unique else LOW
        return cls(tier, tuple(unique))

    def as_data(self) -> list[dict[str, str]]:
        """The reasons as stored and sent: ``[{"tier": …, "text": …}]``."""
        return [{"tier": reason.tier, "text": reason.text} for reason in self.reasons]
