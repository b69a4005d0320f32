"""Pinning services: the only writers of ``UpstreamToolPin``, each with its AuditEvent.

``definitions_review`` is called every time a server's tools are listed: by discovery
(the health interval), when a session to the server opens (a restart included), when
the server says its tools changed, and when a listing before a call does not show the
pinned definition. ``upstream_pin_accept`` and ``upstream_pin_reject`` are an admin's
decisions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import structlog
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ConflictError, InvalidArgumentError, NotFoundError
from tools_app.bridge.definitions import CATEGORY, UpstreamTool
from tools_app.bridge.review import PinEvent, PinState, review_definition, standing_reason
from tools_app.bridge.scan import Finding, Severity, blocking, scan_tool
from tools_app.bridge.standing import HELD_CODE, PinStatus, Standing
from tools_app.models import UpstreamToolPin

log = structlog.get_logger(__name__)

REVIEW_PATH = "/tools/upstream/"
BRIDGE_ACTOR = "mcp-bridge"
RULE_HELD = HELD_CODE
_NAME_FIELD_MAX = {"server": 100, "tool": 200}


def hold_severity() -> tuple[Severity, Finding | None]:
    """The configured hold severity; an invalid setting holds everything (fail closed)."""
    raw = str(settings.SYNTHORG_BRIDGE_HOLD_SEVERITY)
    try:
        return Severity.parse(raw), None
    except ValueError as exc:
        log.error("bridge_hold_severity_invalid", value=raw, error=str(exc))
        return Severity.INFO, Finding(
            Severity.CRITICAL,
            "hold_severity_invalid",
            "SYNTHORG_BRIDGE_HOLD_SEVERITY",
            f"the hold severity setting is invalid ({exc}), so every upstream tool is held",
        )


def _builtin_names() -> list[str]:
    from tools_app.registry import tool_catalog  # the catalog loads tool modules: import late

    return [c.name for c in tool_catalog().registry if c.category.value != CATEGORY]


def _state(pin: UpstreamToolPin | None) -> PinState | None:
    if pin is None:
        return None
    return PinState(
        PinStatus(pin.status), pin.pinned_hash, pin.candidate_hash, pin.accepted_by_person
    )


def pin_standing(pin: UpstreamToolPin | None, contract_name: str) -> Standing:
    """The standing of a stored pin (a tool never reviewed is held: fail closed)."""
    if pin is None:
        return Standing(
            PinStatus.HELD,
            f"{contract_name} has no reviewed definition: its server's tools were not listed "
            "and checked yet, so it cannot be called",
        )
    findings = [
        Finding(Severity.parse(f["severity"]), f["code"], f["field"], f["reason"])
        for f in pin.findings
    ]
    state = _state(pin)
    assert state is not None
    return standing_reason(
        contract_name=contract_name, state=state, findings=findings, review_path=REVIEW_PATH
    )


def upstream_standing(contract_name: str) -> Standing:
    """Whether the upstream tool ``contract_name`` may be called now (preflight, workers)."""
    pin = UpstreamToolPin.objects.filter(contract_name=contract_name).first()
    return pin_standing(pin, contract_name)


def upstream_pin(contract_name: str) -> tuple[Standing, str]:
    """The standing of ``contract_name`` and the hash of the definition a call may meet
    upstream ("" when it may be called on none): what the bridge checks a server's
    listing against before each call."""
    pin = UpstreamToolPin.objects.filter(contract_name=contract_name).first()
    standing = pin_standing(pin, contract_name)
    return standing, pin.pinned_hash if pin is not None and standing.available else ""


def _refused_name(tool: UpstreamTool) -> str | None:
    for field, value in (("server", tool.server), ("tool", tool.name)):
        if not value or len(value) > _NAME_FIELD_MAX[field]:
            return f"the {field} name must be 1 to {_NAME_FIELD_MAX[field]} characters"
    return None


def definitions_review(*, server: str, tools: Sequence[UpstreamTool]) -> Mapping[str, Standing]:
    """Pin, scan and review what ``server`` listed; the standing of each tool by contract name.

    Called by discovery each time a server lists its tools. Each tool is reviewed in
    its own transaction with its audit event; a tool whose definition changed since it
    was pinned, or whose scan finds something at or above the hold severity, is held.
    """
    threshold, setting_problem = hold_severity()
    builtins = _builtin_names()
    listed = [t.contract_name for t in tools]
    elsewhere = list(
        UpstreamToolPin.objects.exclude(server=server).values_list("contract_name", flat=True)
    )
    standings: dict[str, Standing] = {}
    for index, tool in enumerate(tools):
        if tool.server != server:
            raise ValueError(f"tool {tool.name!r} is from {tool.server!r}, not {server!r}")
        others = [*listed[:index], *listed[index + 1 :], *elsewhere]
        findings = scan_tool(tool, others=others, builtins=builtins)
        if setting_problem is not None:
            findings.insert(0, setting_problem)
        standings[tool.contract_name] = _review_one(
            tool=tool, findings=findings, holding=blocking(findings, threshold)
        )
    return standings


@transaction.atomic
def _review_one(*, tool: UpstreamTool, findings: list[Finding], holding: list[Finding]) -> Standing:
    name = tool.contract_name
    refused = _refused_name(tool)
    if refused is not None:
        reason = f"{name[:120]!r} is refused: {refused}"
        audit_record(
            kind="bridge.definition.refused",
            actor=Actor.system(BRIDGE_ACTOR),
            tool=name[:200],
            category=CATEGORY,
            outcome=PinStatus.HELD.value,
            reason=reason,
            data={"server": tool.server[:200], "tool": tool.name[:200]},
        )
        return Standing(PinStatus.HELD, reason)

    now = timezone.now()
    digest = tool.definition_hash()
    pin = (
        UpstreamToolPin.objects.select_for_update()
        .filter(server=tool.server, tool=tool.name)
        .first()
    )
    previous = _state(pin)
    result = review_definition(previous, seen_hash=digest, blocking=holding)
    state = result.state
    found = [f.as_json() for f in findings]
    if pin is None:
        pin = UpstreamToolPin(
            server=tool.server, tool=tool.name, contract_name=name, first_seen_at=now
        )
    if state.pinned_hash == digest and pin.pinned_definition is None:
        pin.pinned_definition = tool.definition()
    if state.candidate_hash == digest and pin.candidate_hash != digest:
        pin.candidate_definition = tool.definition()
        pin.candidate_seen_at = now
    if not state.candidate_hash:
        pin.candidate_definition = None
        pin.candidate_seen_at = None
    pin.status = state.status.value
    pin.pinned_hash = state.pinned_hash
    pin.candidate_hash = state.candidate_hash
    pin.accepted_by_person = state.accepted_by_person
    pin.seen_hash = digest
    pin.findings = found
    pin.last_seen_at = now
    pin.save()
    standing = standing_reason(
        contract_name=name, state=state, findings=findings, review_path=REVIEW_PATH
    )
    withdrawn = 0
    if not standing.available and (previous is None or previous.status is PinStatus.PINNED):
        withdrawn = _withdraw_waiting_calls(name, standing)
    if result.event not in (None, PinEvent.PINNED):  # the set of held tools changed
        _inbox_notice_on_commit()
    if result.event is not None:
        _audit_review(
            pin=pin,
            event=result.event,
            previous=previous,
            standing=standing,
            findings=found,
            withdrawn=withdrawn,
        )
    return standing


def _inbox_notice_on_commit() -> None:
    from common.inbox import upstream_held_on_commit

    upstream_held_on_commit()


def _withdraw_waiting_calls(contract_name: str, standing: Standing) -> int:
    """Calls waiting for people can no longer run once the tool is held: withdraw them."""
    from tools_app.approval_desk import approval_desk

    return approval_desk().withdraw_for_tool(
        tool=contract_name,
        actor=Actor.system(BRIDGE_ACTOR),
        reason=f"withdrawn: {standing.reason} The call will not be approved; call again once "
        "an admin has decided.",
        code=RULE_HELD,
    )


def _audit_review(
    *,
    pin: UpstreamToolPin,
    event: PinEvent,
    previous: PinState | None,
    standing: Standing,
    findings: list[dict[str, str]],
    withdrawn: int,
) -> None:
    data: dict[str, Any] = {
        "server": pin.server,
        "tool": pin.tool,
        "definition_hash": pin.seen_hash,
        "pinned_hash": pin.pinned_hash,
        "findings": findings,
    }
    if withdrawn:
        data["withdrawn_requests"] = withdrawn
    if event is PinEvent.CHANGED:
        data["previous_hash"] = previous.pinned_hash if previous else ""
        data["new_hash"] = pin.candidate_hash
    reasons = {
        PinEvent.PINNED: f"first definition of {pin.contract_name} pinned",
        PinEvent.RESTORED: f"{pin.contract_name} is back to its pinned definition",
    }
    audit_record(
        kind=f"bridge.definition.{event.value}",
        actor=Actor.system(BRIDGE_ACTOR),
        tool=pin.contract_name,
        category=CATEGORY,
        outcome=pin.status,
        reason=reasons.get(event, standing.reason),
        data=data,
    )


def _decision_reason(reason: str) -> str:
    text = reason.strip()
    limit = int(settings.SYNTHORG_BRIDGE_REASON_MAX_CHARS)
    if not text:
        raise InvalidArgumentError("reason: say why you accept or reject this definition")
    if len(text) > limit:
        raise InvalidArgumentError(f"reason: {len(text)} characters; at most {limit} are allowed")
    return text


def _pin_for_decision(*, pin_id: int, expected_hash: str) -> UpstreamToolPin:
    pin = UpstreamToolPin.objects.select_for_update().filter(pk=pin_id).first()
    if pin is None:
        raise NotFoundError(f"no upstream tool pin {pin_id}")
    if pin.status == PinStatus.PINNED or not pin.candidate_hash:
        raise ConflictError(f"{pin.contract_name} has nothing waiting for a decision any more")
    if pin.candidate_hash != expected_hash:
        raise ConflictError(
            f"the definition of {pin.contract_name} changed again since this page was shown "
            f"(now {pin.candidate_hash[:12]}); look at the new one and decide again"
        )
    return pin


@transaction.atomic
def upstream_pin_accept(
    *, pin_id: int, person: Any, expected_hash: str, reason: str
) -> UpstreamToolPin:
    """An admin accepts the held definition: it becomes the pin and the tool is callable."""
    text = _decision_reason(reason)
    pin = _pin_for_decision(pin_id=pin_id, expected_hash=expected_hash)
    old_hash = pin.pinned_hash
    held_reason = pin_standing(pin, pin.contract_name).reason
    pin.pinned_hash, pin.pinned_definition = pin.candidate_hash, pin.candidate_definition
    pin.candidate_hash, pin.candidate_definition, pin.candidate_seen_at = "", None, None
    pin.status = PinStatus.PINNED.value
    pin.accepted_by_person = True
    _decided(pin, person, text)
    released = _release_record(pin, held_reason)
    audit_record(
        kind="bridge.definition.accepted",
        actor=Actor.person(person),
        tool=pin.contract_name,
        category=CATEGORY,
        outcome=pin.status,
        reason=text,
        data={
            "server": pin.server,
            "tool": pin.tool,
            "previous_hash": old_hash,
            "new_hash": pin.pinned_hash,
            "findings": pin.findings,
            "callable_now": released,
        },
    )
    return pin


def _release_record(pin: UpstreamToolPin, held_reason: str) -> bool:
    """The discovered tool, unavailable only because of this hold, is callable at once.

    Without this it would wait for its server's next listing (the health interval). A
    record unavailable for another reason (its server failed, it lists another
    definition now) stays as it is until discovery says otherwise.
    """
    from tools_app.models import UpstreamToolRecord

    return bool(
        UpstreamToolRecord.objects.filter(
            name=pin.contract_name,
            upstream_hash=pin.pinned_hash,
            available=False,
            reason=held_reason,
            contract__isnull=False,
        ).update(available=True, reason="", updated_at=timezone.now())
    )


@transaction.atomic
def upstream_pin_reject(
    *, pin_id: int, person: Any, expected_hash: str, reason: str
) -> UpstreamToolPin:
    """An admin rejects the held definition: refused until the server goes back to the pin."""
    text = _decision_reason(reason)
    pin = _pin_for_decision(pin_id=pin_id, expected_hash=expected_hash)
    pin.status = PinStatus.REJECTED.value
    _decided(pin, person, text)
    audit_record(
        kind="bridge.definition.rejected",
        actor=Actor.person(person),
        tool=pin.contract_name,
        category=CATEGORY,
        outcome=pin.status,
        reason=text,
        data={
            "server": pin.server,
            "tool": pin.tool,
            "pinned_hash": pin.pinned_hash,
            "rejected_hash": pin.candidate_hash,
            "findings": pin.findings,
        },
    )
    return pin


def _decided(pin: UpstreamToolPin, person: Any, reason: str) -> None:
    _inbox_notice_on_commit()
    pin.decided_by = person
    pin.decided_by_name = person.get_username()
    pin.decided_at = timezone.now()
    pin.decision_reason = reason
    pin.save()
