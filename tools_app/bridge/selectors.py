"""Reads of upstream tool pins: the admins' review page, the operators' inbox, and which
upstream tools the agents' listings show (and with which of their server's words); and
the configured servers as the tools pages show them (state, reason, tools recorded)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tools_app.bridge.definitions import ServerWords, server_words
from tools_app.bridge.diff import DiffLine, definition_diff, readable_definition
from tools_app.bridge.health import NOT_CHECKED, ServerState, server_states
from tools_app.bridge.pinning import pin_standing
from tools_app.bridge.standing import shown_to_agents
from tools_app.bridge.tool import BridgedTool
from tools_app.models import UpstreamToolPin, UpstreamToolRecord
from trust_app.policy import name_key

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


def upstream_pin_findings(pin_id: int) -> list[dict[str, Any]]:
    """The scan's findings on one pin's definition; none for a pin that does not exist."""
    pin = UpstreamToolPin.objects.filter(pk=pin_id).only("findings").first()
    return list(pin.findings) if pin is not None else []


def held_upstream_tools() -> list[str]:
    """Contract names of upstream tools held for an admin's review."""
    return list(
        UpstreamToolPin.objects.filter(status=UpstreamToolPin.Status.HELD).values_list(
            "contract_name", flat=True
        )
    )


def unlisted_upstream_tools(implementations: Mapping[str, Any]) -> frozenset[str]:
    """Name keys of the catalog's upstream tools that agents are not shown.

    ``implementations`` are a catalog's, by name key. An upstream tool is shown only on
    its pinned definition (``standing.shown_to_agents``): read fresh here, not from the
    catalog's copy, so a tool is gone from every listing once its pin is held, whatever
    the age of the catalog. Calls to it are still refused with the reason.
    """
    recorded = {
        key: tool.record for key, tool in implementations.items() if isinstance(tool, BridgedTool)
    }
    if not recorded:
        return frozenset()
    pins = {
        name_key(name): (status, pinned_hash)
        for name, status, pinned_hash in UpstreamToolPin.objects.filter(
            contract_name__in=[record.name for record in recorded.values()]
        ).values_list("contract_name", "status", "pinned_hash")
    }
    hidden = set()
    for key, record in recorded.items():
        status, pinned_hash = pins.get(key, ("", ""))  # never reviewed: not shown
        if not shown_to_agents(
            status=status, pinned_hash=pinned_hash, recorded_hash=record.upstream_hash
        ):
            hidden.add(key)
    return frozenset(hidden)


def upstream_server_words(names: Iterable[str]) -> dict[str, ServerWords]:
    """The server's words (title, ``openWorldHint: false``) of each pinned upstream tool
    named, from its pinned definition, by contract name."""
    wanted = list(names)
    if not wanted:
        return {}
    pins = UpstreamToolPin.objects.filter(
        contract_name__in=wanted, status=UpstreamToolPin.Status.PINNED
    ).values_list("contract_name", "pinned_definition")
    return {name: server_words(definition) for name, definition in pins}


@dataclass(frozen=True)
class ServerView:
    """One configured upstream server on the tools pages."""

    health: ServerState
    recorded: int  # its tools the console knows of
    available: int  # of those, callable now
    unavailable: dict[str, str]  # the others: contract name -> reason


def upstream_servers() -> list[ServerView]:
    """Every configured server with its last health check and its recorded tools."""
    from common.settings_config import synthorg_config

    servers = synthorg_config().mcp_servers
    if not servers:
        return []
    try:
        states = server_states(servers)
    except Exception:  # Redis unreadable: its own part of /healthz says so
        states = [ServerState(s.name, s.transport, NOT_CHECKED) for s in servers]
    rows = UpstreamToolRecord.objects.filter(server__in=[s.name for s in servers])
    by_server: dict[str, list[UpstreamToolRecord]] = {}
    for row in rows.order_by("name"):
        by_server.setdefault(row.server, []).append(row)
    views = []
    for state in states:
        records = by_server.get(state.server, [])
        views.append(
            ServerView(
                health=state,
                recorded=len(records),
                available=sum(1 for r in records if r.available),
                unavailable={r.name: r.reason for r in records if not r.available},
            )
        )
    return views
