"""PURE: whether an upstream tool may be called now, and if not, why.

Discovery asks the pinning review for a ``Standing`` each time a server lists its
tools; preflight asks again for every call. The reason is written for both
readers: the admin who can act on it and the agent that is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PinStatus(StrEnum):
    PINNED = "pinned"  # the definition seen is the accepted one
    HELD = "held"  # a new or changed definition waits for an admin
    REJECTED = "rejected"  # an admin refused the changed definition


@dataclass(frozen=True)
class Standing:
    """Available, or held (or rejected) with a reason a person and an agent can read."""

    status: PinStatus
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.status is PinStatus.PINNED

    @classmethod
    def pinned(cls) -> Standing:
        return cls(PinStatus.PINNED)
