"""A design tool's picture on its audit event: served by reference to the people who read
that event, and only as the bytes its audit row recorded."""

from __future__ import annotations

import hashlib
import io
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from PIL import Image

from audit_app.models import AuditEvent
from audit_app.record import Actor, audit_record
from tests.common.permission_suite import signed_in
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create
from trust_app.services.teams import team_create

pytestmark = pytest.mark.django_db


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (24, 16), colour).save(buffer, "PNG")
    return buffer.getvalue()


PICTURE = _png((200, 30, 30))


def _agent(team: str | None = None) -> Agent:
    return agent_create(name=f"designer-{uuid.uuid4().hex[:6]}", access_level="standard",
                        team=team).agent  # fmt: skip


def _kept(agent: Agent, data: bytes, name: str = "mock.png") -> str:
    folder = Path(agent.workspace) / ".synthorg" / "mockups"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return f".synthorg/mockups/{name}"


def _event(agent: Agent, path: str, data: bytes, **fields: Any) -> AuditEvent:
    with transaction.atomic():
        return audit_record(
            kind=fields.pop("kind", "design.mockup_render"),
            actor=Actor.agent(agent),
            agent=agent,
            tool="mockup_render",
            category="design",
            action_type="docs:write",
            outcome="stored",
            data={"path": path, "sha256": hashlib.sha256(data).hexdigest(), **fields},
        )


@pytest.fixture
def auditor() -> Client:
    person_create(username="audrey", role="auditor", password=None)
    return signed_in("audrey")


def test_the_picture_is_shown_on_its_event_as_recorded(auditor: Client) -> None:
    agent = _agent()
    event = _event(agent, _kept(agent, PICTURE), PICTURE)
    answer = auditor.get(f"/audit/{event.id}/picture/")
    assert answer.status_code == 200
    assert answer["Content-Type"] == "image/png" and answer.content == PICTURE
    assert answer["X-Content-Type-Options"] == "nosniff"
    page = auditor.get(f"/audit/{event.id}/").content.decode()
    assert f'src="/audit/{event.id}/picture/"' in page

    # The file changed since the call: not shown (the page shows no picture either way
    # but for the reference; the bytes are refused).
    _kept(agent, _png((0, 0, 0)))
    assert auditor.get(f"/audit/{event.id}/picture/").status_code == 404


def test_a_picture_that_is_not_the_recorded_file_is_refused(auditor: Client) -> None:
    agent = _agent()
    outside = Path(agent.workspace).parent / f"outside-{uuid.uuid4().hex[:6]}.png"
    outside.write_bytes(PICTURE)
    try:
        folder = Path(agent.workspace) / ".synthorg" / "mockups"
        folder.mkdir(parents=True)
        os.symlink(outside, folder / "linked.png")
        linked = _event(agent, ".synthorg/mockups/linked.png", PICTURE)
        escaping = _event(agent, f".synthorg/mockups/../../{outside.name}", PICTURE)
        elsewhere = _event(agent, ".synthorg/screenshots/a.png", PICTURE)
        not_a_picture = b"<svg xmlns='http://www.w3.org/2000/svg'><script>1</script></svg>"
        markup = _event(agent, _kept(agent, not_a_picture, "a.png"), not_a_picture)
        # A FIFO in the picture's place: refused at once, the reader is not held.
        os.mkfifo(folder / "pipe.png")
        piped = _event(agent, ".synthorg/mockups/pipe.png", PICTURE)
        for event in (linked, escaping, elsewhere, markup, piped):
            assert auditor.get(f"/audit/{event.id}/picture/").status_code == 404, event.data
        # Control: the same agent's plain file, recorded as it is, is served.
        plain = _event(agent, _kept(agent, PICTURE, "plain.png"), PICTURE)
        assert auditor.get(f"/audit/{plain.id}/picture/").status_code == 200
    finally:
        outside.unlink()


def test_only_people_who_read_the_event_get_its_picture() -> None:
    team_create(name="studio")
    team_create(name="ops")
    agent = _agent("studio")
    event = _event(agent, _kept(agent, PICTURE), PICTURE)
    person_create(username="ops-auditor", role="auditor", password=None, team="ops")
    person_create(username="studio-auditor", role="auditor", password=None, team="studio")
    person_create(username="olive", role="operator", password=None)
    assert signed_in("ops-auditor").get(f"/audit/{event.id}/picture/").status_code == 404
    assert signed_in("olive").get(f"/audit/{event.id}/picture/").status_code == 403
    assert Client().get(f"/audit/{event.id}/picture/").status_code == 302
    # Control: the auditor of the agent's own team gets it.
    assert signed_in("studio-auditor").get(f"/audit/{event.id}/picture/").content == PICTURE
