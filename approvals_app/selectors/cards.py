"""Build an approval card's view: the call's display model, the level that applies,
the agent's recent record and the request's age (the Django side of the cards)."""

from __future__ import annotations

import asyncio
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from django.conf import settings
from django.db import connection

from approvals_app.cards.model import Card, CardInput, CardLimits, CurrentFile
from approvals_app.cards.render import render_card
from approvals_app.cards.workspace import read_current_file
from trust_app.strategies.effective import EffectiveLevel

# Defaults for the card settings (``SYNTHORG_CARD_<NAME>`` in the Django settings).
DEFAULTS: Final = MappingProxyType(
    {
        "FOLD_CHARS": 1200,  # a value longer than this is folded behind its size
        "FOLD_LINES": 24,
        "DIFF_LINES": 600,  # diff lines shown before the rest is cut
        "PREVIEW_CHARS": 2000,  # of an HTTP body or stdin
        "FACT_CHARS": 300,
        "SHOWN_CHARS": 32_000,  # of any one block and of the raw JSON: bounds a card's size
        "CURRENT_FILE_MAX_BYTES": 256 * 1024,  # the current file is read for a diff up to this
        "RECORD_CALLS": 20,  # the agent's most recent calls summarised on the card
    }
)
# Tools whose ``path`` names a file the call would change (diffed against it).
FILE_CHANGERS: Final = frozenset({"write_file", "edit_file"})
FAILED: Final = frozenset({"failed", "timed_out"})


def card_setting(name: str) -> int:
    """A card setting: ``SYNTHORG_CARD_<NAME>`` from the settings, else its default."""
    return int(getattr(settings, f"SYNTHORG_CARD_{name}", DEFAULTS[name]))


def card_limits() -> CardLimits:
    return CardLimits(
        fold_chars=card_setting("FOLD_CHARS"),
        fold_lines=card_setting("FOLD_LINES"),
        diff_lines=card_setting("DIFF_LINES"),
        preview_chars=card_setting("PREVIEW_CHARS"),
        fact_chars=card_setting("FACT_CHARS"),
        shown_chars=card_setting("SHOWN_CHARS"),
    )


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """How the agent's last calls ended."""

    calls: int
    succeeded: int
    failed: int
    denied: int
    other: int


@dataclass(frozen=True, slots=True)
class CardView:
    """Everything a card shows beyond the request's own fields."""

    card: Card
    level: EffectiveLevel
    record: AgentRecord


def _key_order(tool: str) -> tuple[str, ...]:
    from tools_app.registry import tool_catalog

    try:
        contract = tool_catalog().contract(tool)
    except Exception:  # an unloadable catalog must not hide the card
        return ()
    if contract is None:
        return ()
    properties = contract.input_schema.get("properties", {})
    return tuple(properties) if isinstance(properties, dict) else ()


def _current_file(invocation: Any) -> CurrentFile | None:
    if invocation.tool not in FILE_CHANGERS:
        return None
    arguments = invocation.arguments_redacted or {}
    return read_current_file(
        invocation.agent.workspace,
        arguments.get("path"),
        max_bytes=card_setting("CURRENT_FILE_MAX_BYTES"),
    )


def agent_record(agent_id: Any, *, excluding: Any = None) -> AgentRecord:
    """The outcomes of the agent's most recent calls (the one being decided left out)."""
    from tools_app.models import Invocation

    rows = Invocation.objects.filter(agent_id=agent_id)
    if excluding is not None:
        rows = rows.exclude(id=excluding)
    statuses = list(
        rows.order_by("-created_at").values_list("status", flat=True)[
            : card_setting("RECORD_CALLS")
        ]
    )
    counts = Counter(statuses)
    failed = sum(counts[s] for s in FAILED)
    known = counts["succeeded"] + failed + counts["denied"]
    return AgentRecord(
        len(statuses), counts["succeeded"], failed, counts["denied"], len(statuses) - known
    )


def card_for(invocation: Any) -> Card:
    """The display model of ``invocation``'s call."""
    return render_card(
        CardInput(
            tool=invocation.tool,
            category=invocation.category,
            arguments=invocation.arguments_redacted or {},
            key_order=_key_order(invocation.tool),
            current_file=_current_file(invocation),
        ),
        card_limits(),
    )


def _build(request: Any) -> CardView:
    from trust_app.selectors.trust import agent_effective_level

    invocation = request.invocation
    return CardView(
        card=card_for(invocation),
        level=agent_effective_level(invocation.agent),
        record=agent_record(invocation.agent_id, excluding=invocation.id),
    )


def _in_own_thread(request: Any) -> CardView:
    try:
        return _build(request)
    finally:
        connection.close()  # the thread's own connection, so none outlives it


def card_view(request: Any) -> CardView:
    """The card of an approval request, built once per loaded request object.

    A publisher may run inside a thread that runs an event loop, where Django
    refuses database reads: the card's reads then run in a thread of their own.
    """
    cached = getattr(request, "_card_view", None)
    if cached is not None:
        return cached
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        view = _build(request)
    else:
        with ThreadPoolExecutor(max_workers=1) as pool:
            view = pool.submit(_in_own_thread, request).result()
    request._card_view = view
    return view
