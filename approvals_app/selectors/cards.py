"""Build an approval card's view: the call's display model, its risk, the level that
applies, the agent's recent record (the Django side of the cards).

A card shows the call's own arguments, exactly as the call will write or send them.
The only values masked are those the console itself holds as secrets (its own keys
and every stored secret's value): an agent never holds one, so one written literally
is shown as a mark, and a reference (``${secret:NAME}``) is shown as it is.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final

from django.conf import settings
from django.db import connection

from approvals_app.cards.characters import escaped
from approvals_app.cards.effect import effect_of
from approvals_app.cards.model import Card, CardInput, CardLimits, CurrentFile, FlaggedValue
from approvals_app.cards.render import flagged_values, render_card
from approvals_app.cards.text import ordered
from approvals_app.cards.workspace import read_current_file
from approvals_app.policy.risk_words import RiskReason
from approvals_app.selectors.pictures import CardPicture, card_pictures
from tools_app.builtin.file_system.paths import workspace_roots
from tools_app.sanitize.known import known_secrets_for
from trust_app.strategies.effective import EffectiveLevel

# Defaults for the card settings (``SYNTHORG_CARD_<NAME>`` in the Django settings).
DEFAULTS: Final = MappingProxyType(
    {
        "FOLD_CHARS": 1200,  # a value longer than this is folded behind its size
        "FOLD_LINES": 24,
        "DIFF_LINES": 600,  # diff lines shown before the rest is cut
        "PREVIEW_CHARS": 2000,  # of an HTTP body or stdin
        "FACT_CHARS": 300,
        "EFFECT_CHARS": 600,  # of the effect line; a longer one loses its middle
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


# The whole call's page has no bound: every argument in full, every diff line.
WHOLE: Final = CardLimits(
    diff_lines=2**62,
    preview_chars=2**62,
    fact_chars=2**62,
    effect_chars=2**62,
    shown_chars=2**62,
)


def card_limits(*, whole: bool = False) -> CardLimits:
    if whole:
        return dataclasses.replace(
            WHOLE, fold_chars=card_setting("FOLD_CHARS"), fold_lines=card_setting("FOLD_LINES")
        )
    return CardLimits(
        fold_chars=card_setting("FOLD_CHARS"),
        fold_lines=card_setting("FOLD_LINES"),
        diff_lines=card_setting("DIFF_LINES"),
        preview_chars=card_setting("PREVIEW_CHARS"),
        fact_chars=card_setting("FACT_CHARS"),
        effect_chars=card_setting("EFFECT_CHARS"),
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
class RiskView:
    """The request's risk label and its reasons, most serious first."""

    tier: str
    reasons: tuple[RiskReason, ...]


@dataclass(frozen=True, slots=True)
class CardView:
    """Everything a card shows beyond the request's own fields."""

    card: Card
    level: EffectiveLevel
    record: AgentRecord
    risk: RiskView
    # The agent's own words about the call (its purpose, its task): claims, not facts.
    claim: AgentClaim = field(default_factory=lambda: AgentClaim())
    # What the call would touch, looked at when it was asked.
    previews: tuple[PreviewFact, ...] = ()
    # The pictures the call depends on, checked against their recorded digests.
    pictures: tuple[CardPicture, ...] = ()


@dataclass(frozen=True, slots=True)
class PreviewFact:
    """One consequence preview as the card labels it (``at``: when it was computed)."""

    kind: str
    label: str
    text: str
    available: bool
    # Lines shown below the text (a commit's diff), as stored.
    detail: str = ""


def _when(stamp: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return "time unknown"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def preview_facts(request: Any) -> tuple[PreviewFact, ...]:
    """The previews stored with ``request``, labelled with when they were computed."""
    return tuple(
        PreviewFact(
            kind=str(item.get("kind", "")),
            label=(
                f"Preview (asked for at {_when(item.get('at'))})"
                if item.get("pending")
                else f"Preview (computed when asked, {_when(item.get('at'))})"
            ),
            text=str(item.get("text", "")),
            available=bool(item.get("available", False)),
            detail=str(item.get("detail") or ""),
        )
        for item in (getattr(request, "previews", None) or [])
        if isinstance(item, dict)
    )


@dataclass(frozen=True, slots=True)
class AgentClaim:
    """What the agent says about its call, and the characters in it to look at twice."""

    purpose: str = ""
    task_id: str = ""
    flagged: tuple[FlaggedValue, ...] = ()

    @property
    def said(self) -> bool:
        return bool(self.purpose or self.task_id)


def agent_claim(invocation: Any) -> AgentClaim:
    """The purpose and task the agent gave with ``invocation``."""
    purpose = str(getattr(invocation, "purpose", "") or "")
    task_id = str(getattr(invocation, "task_id", "") or "")
    given = {name: value for name, value in (("purpose", purpose), ("task_id", task_id)) if value}
    return AgentClaim(purpose=purpose, task_id=task_id, flagged=flagged_values(given))


def risk_view(request: Any) -> RiskView:
    """The risk stored with ``request`` (its reasons as people read them)."""
    reasons = tuple(
        RiskReason(str(item.get("tier", "")), str(item.get("text", "")))
        for item in (request.risk_reasons or [])
        if isinstance(item, dict)
    )
    return RiskView(request.risk_tier, reasons)


def _contract(tool: str) -> Any:
    from tools_app.registry import tool_catalog

    try:
        return tool_catalog().contract(tool)
    except Exception:  # an unloadable catalog must not hide the card
        return None


def _key_order(contract: Any) -> tuple[str, ...]:
    if contract is None:
        return ()
    properties = contract.input_schema.get("properties", {})
    return tuple(properties) if isinstance(properties, dict) else ()


def _console_secrets() -> Any:
    from tools_app.secrets import known_secrets_now

    minimum = int(getattr(settings, "SYNTHORG_SECRET_MIN_LENGTH", 8))
    return known_secrets_for(tuple(known_secrets_now()), minimum)


def _masked(value: Any, known: Any) -> Any:
    if isinstance(value, str):
        return known.redact(value, Counter())
    if isinstance(value, dict):
        return {_masked(str(k), known): _masked(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(item, known) for item in value]
    return value


def shown_arguments(invocation: Any) -> dict[str, Any]:
    """The call's arguments exactly as it will run, each value the console holds as a
    secret replaced by a mark (``[REDACTED:known_secret]``)."""
    arguments = invocation.arguments if isinstance(invocation.arguments, dict) else {}
    known = _console_secrets()
    return _masked(arguments, known) if known else dict(arguments)


def _roots(invocation: Any) -> tuple[str, ...]:
    workspace = invocation.agent.workspace
    if not workspace:
        return ()
    try:
        return workspace_roots(workspace)
    except OSError:
        return ()


def _current_file(invocation: Any, arguments: dict[str, Any]) -> CurrentFile | None:
    if invocation.tool not in FILE_CHANGERS:
        return None
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


def card_input(invocation: Any, *, read_file: bool = True) -> CardInput:
    """What the card core needs about ``invocation`` (``read_file``: the file it changes)."""
    contract = _contract(invocation.tool)
    arguments = shown_arguments(invocation)
    roles = {}
    if contract is not None:
        roles = {name: role.value for name, role in contract.argument_roles.items()}
    return CardInput(
        tool=invocation.tool,
        category=invocation.category,
        arguments=arguments,
        key_order=_key_order(contract),
        current_file=_current_file(invocation, arguments) if read_file else None,
        argument_roles=roles,
        workspace_roots=_roots(invocation),
    )


def card_for(invocation: Any, *, whole: bool = False) -> Card:
    """The display model of ``invocation``'s call (``whole``: nothing cut)."""
    return render_card(card_input(invocation), card_limits(whole=whole))


def call_summary(invocation: Any) -> dict[str, Any]:
    """The card's first line and the characters to check, as plain data (for the API):
    the effect as the policy resolved it (its middle cut when long, never its end),
    invisible characters written as escapes."""
    given = card_input(invocation, read_file=False)
    arguments = ordered(dict(given.arguments), given.key_order)
    effect = effect_of(given, arguments, card_limits())
    return {
        "effect": escaped(effect.head) + effect.cut + escaped(effect.tail),
        "effect_notes": [escaped(note) for note in effect.notes],
        "characters_to_check": [
            {
                "where": value.where,
                "character": flag.code,
                "name": flag.name,
                "kind": flag.kind,
                "looks_like": flag.looks_like or None,
            }
            for value in flagged_values(arguments)
            for flag in value.flags
        ],
    }


def _build(request: Any, whole: bool = False) -> CardView:
    from trust_app.selectors.trust import agent_effective_level

    invocation = request.invocation
    return CardView(
        card=card_for(invocation, whole=whole),
        level=agent_effective_level(invocation.agent),
        record=agent_record(invocation.agent_id, excluding=invocation.id),
        risk=risk_view(request),
        claim=agent_claim(invocation),
        previews=preview_facts(request),
        pictures=call_pictures(invocation),
    )


def call_pictures(invocation: Any) -> tuple[CardPicture, ...]:
    """The pictures ``invocation``'s call depends on (see ``selectors.pictures``)."""
    return card_pictures(invocation)


def whole_card_view(request: Any) -> CardView:
    """The card of ``request`` with every argument in full (the whole call's page)."""
    return _build(request, whole=True)


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
