"""PURE: whether an upstream tool may be called now, and if not, why; whether agents are
shown it; and why a call is not sent after all.

Discovery asks the pinning review for a ``Standing`` each time a server lists its
tools; preflight asks again for every call. The reason is written for both
readers: the admin who can act on it and the agent that is refused. Agents are shown
a tool only on its pinned definition; a call is sent only when the server, listed
just before it, still gives that definition.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# The code of a call refused because its tool is not on its pinned definition.
HELD_CODE = "upstream_definition_held"


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


def shown_to_agents(*, status: str, pinned_hash: str, recorded_hash: str) -> bool:
    """Whether agents are shown an upstream tool at all (its listing, its L2 body).

    Only on its pinned definition: the pin stands (``pinned``) and the definition the
    console recorded, and built the contract agents would read from, is the pinned one.
    A tool held (a changed definition, or held by the scan on first sight), rejected,
    never reviewed, or recorded from another definition is absent: its new words never
    reach an agent while a person has not accepted them.
    """
    return status == PinStatus.PINNED.value and bool(pinned_hash) and pinned_hash == recorded_hash


@dataclass(frozen=True)
class CallRefusal:
    """Why a call is not sent upstream after all, as its failure code and words."""

    code: str
    reason: str


def refusal_before_call(
    *, contract_name: str, server: str, listed: bool, standing: Standing
) -> CallRefusal:
    """The refusal of a call whose server, listed just before it, did not show the
    definition pinned for its tool (``standing``: the tool's, once that listing was
    reviewed)."""
    if not listed:
        return CallRefusal(
            "upstream_unavailable",
            f"{contract_name} was not run: the MCP server {server} no longer lists it.",
        )
    if not standing.available:
        return CallRefusal(HELD_CODE, f"{standing.reason} This call was not run.")
    return CallRefusal(
        "definition_changed",
        f"{contract_name} was not run: its server gave another definition than the one "
        "pinned when the call was checked; call again.",
    )
