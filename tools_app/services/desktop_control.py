"""A person takes over an agent's virtual desktop, acts on it and hands it back.

While a person holds it (a ``DesktopTakeover`` row), the agent's desktop calls fail
``desktop_taken_over`` naming them, and only they act on the screen. Taking over and
handing back are written here, in the web node's transaction, with their audit event;
a person's action runs on the worker that reaches the session (``desktop_person_act``,
from the task) and is audited there with its outcome, the person as actor.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import structlog
from celery import current_app
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from audit_app.record import Actor, audit_record
from common.errors import ConflictError
from common.settings_config import synthorg_config
from tools_app.builtin.base import ToolRefusedError
from tools_app.builtin.desktop.placement import placement_queue
from tools_app.builtin.desktop.session import DesktopSessionError
from tools_app.builtin.desktop.watch import checked_person_request, person_act
from tools_app.models import DesktopTakeover
from tools_app.sanitize import redact_secrets
from tools_app.secrets import known_secrets_now
from trust_app.models import Agent

ACT_TASK = "tools_app.desktop_person_act"
CATEGORY = "desktop"
# How often an action waiting for the person's earlier ones looks again, in seconds.
ACT_ORDER_POLL_SECONDS = 0.02

log = structlog.get_logger("synthorg.desktop")


def desktop_queue() -> str:
    """The queue of the workers that run the desktop category (its sandbox backend's)."""
    return f"sandbox.{synthorg_config().sandboxing.backend_for(CATEGORY)}"


def desktop_route(agent_id: str) -> str:
    """Where work on ``agent_id``'s desktop goes: the queue of the machine holding its
    session, else the category's queue (the session starts wherever that is taken)."""
    return placement_queue(agent_id) or desktop_queue()


@transaction.atomic
def desktop_take_over(*, agent: Agent, person: Any) -> DesktopTakeover:
    """``person`` holds ``agent``'s desktop from now; ConflictError while another does."""
    held = DesktopTakeover.objects.select_for_update().filter(agent=agent).first()
    if held is not None:
        if held.person_id == person.pk:
            return held
        raise ConflictError(f"{held.person_name} holds this desktop; they hand it back first")
    try:
        with transaction.atomic():
            held = DesktopTakeover.objects.create(
                agent=agent,
                person=person,
                person_name=person.get_username(),
                started_at=timezone.now(),
            )
    except IntegrityError as exc:  # another person took it at the same moment
        raise ConflictError("someone else took over this desktop just now") from exc
    audit_record(
        kind="desktop.take_over",
        actor=Actor.person(person),
        agent=agent,
        category=CATEGORY,
        outcome="taken_over",
        reason="the agent's desktop calls are refused until it is handed back",
    )
    return held


@transaction.atomic
def desktop_hand_back(*, agent: Agent, person: Any) -> bool:
    """Give ``agent`` its desktop back; False when nobody held it."""
    held = DesktopTakeover.objects.select_for_update().filter(agent=agent).first()
    if held is None:
        return False
    holder = held.person_name
    held.delete()
    audit_record(
        kind="desktop.hand_back",
        actor=Actor.person(person),
        agent=agent,
        category=CATEGORY,
        outcome="handed_back",
        data={"held_by": holder, "held_since": held.started_at.isoformat()},
    )
    return True


def desktop_person_act_send(*, agent: Agent, person: Any, fields: dict[str, Any]) -> None:
    """Check a person's action (as an agent's would be) and send it to the desktop's workers.

    Raises ToolRefusedError for arguments outside the rules, ConflictError when the
    person does not hold the desktop.
    """
    section = synthorg_config().desktop
    if section is None:
        raise ConflictError("the desktop tools are off: the config has no 'desktop' section")
    request = checked_person_request(section, fields)
    with transaction.atomic():
        held = (
            DesktopTakeover.objects.select_for_update()
            .filter(agent=agent, person_id=person.pk)
            .first()
        )
        if held is None:
            raise ConflictError("take over the desktop before acting on it")
        # Numbered under the row's lock: the numbers follow the order the person made
        # them in, whichever web thread or worker thread each one meets.
        held.acts_sent += 1
        held.save(update_fields=["acts_sent"])
        sequence = held.acts_sent
        queue = desktop_route(str(agent.id))
        transaction.on_commit(
            lambda: current_app.send_task(
                ACT_TASK,
                args=[str(agent.id), str(person.pk), request, sequence],
                queue=queue,
                ignore_result=True,
            )
        )


def _described(request: dict[str, Any]) -> dict[str, Any]:
    """The action as audit rows show it: typed text with stored secrets' values redacted."""
    shown = dict(request)
    if "text" in shown:
        shown["text"] = redact_secrets(shown["text"], known_secrets_now())
        shown["characters"] = len(request["text"])
    return shown


def _wait_turn(*, agent_id: uuid.UUID, person_id: int, sequence: int) -> None:
    """Return once the person's actions before ``sequence`` have run.

    Two actions sent a moment apart (typing, then Return) may reach two worker threads
    at once; run in the wrong order, the key would come before the text. An earlier one
    that never runs (lost with its worker) is waited for SYNTHORG_DESKTOP_ACT_ORDER_SECONDS.
    """
    deadline = time.monotonic() + settings.SYNTHORG_DESKTOP_ACT_ORDER_SECONDS
    held = DesktopTakeover.objects.filter(agent_id=agent_id, person_id=person_id)
    while True:
        done = held.values_list("acts_done", flat=True).first()
        if done is None or done >= sequence - 1:
            return  # its turn, or no longer held (refused below)
        if time.monotonic() >= deadline:
            log.warning(
                "desktop_act_out_of_turn", agent=str(agent_id), sequence=sequence, done=done
            )
            return
        time.sleep(ACT_ORDER_POLL_SECONDS)


def desktop_person_act(
    *, agent_id: uuid.UUID, person_id: int, request: dict[str, Any], sequence: int | None = None
) -> str:
    """Run a person's action on the agent's session (worker side) and audit it; its outcome.

    ``sequence``: its number among the person's actions (None from a console that did not
    number them: run at once).
    """
    if sequence is None:
        return _act(agent_id=agent_id, person_id=person_id, request=request)
    _wait_turn(agent_id=agent_id, person_id=person_id, sequence=sequence)
    try:
        return _act(agent_id=agent_id, person_id=person_id, request=request)
    finally:
        DesktopTakeover.objects.filter(agent_id=agent_id, person_id=person_id).update(
            acts_done=Greatest(F("acts_done"), sequence)
        )


def _act(*, agent_id: uuid.UUID, person_id: int, request: dict[str, Any]) -> str:
    agent = Agent.objects.get(id=agent_id)
    person = get_user_model().objects.filter(pk=person_id).first()
    section = synthorg_config().desktop
    holds = DesktopTakeover.objects.filter(agent=agent, person_id=person_id).exists()
    outcome, reason, code = "done", "", ""
    if person is None or section is None or not holds:
        # Handed back (or switched off) between the press and the worker: nothing is done.
        outcome, reason, code = "refused", "the person no longer holds this desktop", "not_held"
    else:
        try:
            person_act(section, str(agent.id), Path(agent.workspace), request)
        except ToolRefusedError as exc:
            outcome, reason, code = "refused", exc.reason, str(exc.code.value)
        except DesktopSessionError as exc:
            outcome, reason, code = "failed", exc.message, exc.code
    actor = Actor.person(person) if person is not None else Actor("person", str(person_id), "")
    with transaction.atomic():
        audit_record(
            kind="desktop.person_act",
            actor=actor,
            agent=agent,
            category=CATEGORY,
            action_type=f"desktop:{request.get('action')}",
            outcome=outcome,
            reason=reason,
            data={**_described(request), **({"code": code} if code else {})},
        )
    return outcome
