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


def _tool_event(
    agent: Agent, kind: str, pictures: list[dict[str, str]], **fields: Any
) -> AuditEvent:
    with transaction.atomic():
        return audit_record(
            kind=kind,
            actor=Actor.agent(agent),
            agent=agent,
            invocation_id=fields.pop("invocation_id", None),
            tool=fields.pop("tool", "browser_screenshot"),
            category=fields.pop("category", "browser"),
            action_type="browser:screenshot",
            outcome="stored",
            data={"pictures": pictures},
        )


def _screenshot(agent: Agent, data: bytes, name: str = "shot.png") -> dict[str, str]:
    folder = Path(agent.workspace) / ".synthorg" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return {
        "label": "screenshot",
        "path": f".synthorg/screenshots/{name}",
        "sha256": hashlib.sha256(data).hexdigest(),
        "media_type": "image/png",
    }


def test_a_screenshot_is_shown_while_it_is_the_recorded_one_and_a_swap_is_said(
    auditor: Client,
) -> None:
    agent = _agent()
    event = _tool_event(agent, "browser.screenshot", [_screenshot(agent, PICTURE)])
    page = auditor.get(f"/audit/{event.id}/").content.decode()
    assert f'<img src="/audit/{event.id}/picture/"' in page
    assert auditor.get(f"/audit/{event.id}/picture/").content == PICTURE

    # Another picture put in its place: not shown, and the page says so.
    _screenshot(agent, _png((0, 0, 0)))
    page = auditor.get(f"/audit/{event.id}/").content.decode()
    assert f'<img src="/audit/{event.id}/picture/"' not in page
    assert 'data-state="changed"' in page and "changed since the call" in page
    assert auditor.get(f"/audit/{event.id}/picture/").status_code == 404


def test_a_link_put_in_place_of_a_screenshot_is_not_followed(auditor: Client) -> None:
    agent = _agent()
    recorded = _screenshot(agent, PICTURE)
    event = _tool_event(agent, "browser.screenshot", [recorded])
    target = Path(agent.workspace) / recorded["path"]
    # The same bytes elsewhere in the workspace, and a link to them where the picture was.
    (Path(agent.workspace) / "copy.png").write_bytes(PICTURE)
    target.unlink()
    os.symlink(Path(agent.workspace) / "copy.png", target)
    page = auditor.get(f"/audit/{event.id}/").content.decode()
    assert 'data-state="refused"' in page and "not followed" in page
    assert auditor.get(f"/audit/{event.id}/picture/").status_code == 404
    # Control: the plain file back in its place is shown again.
    target.unlink()
    target.write_bytes(PICTURE)
    assert auditor.get(f"/audit/{event.id}/picture/").content == PICTURE


SVG_WITH_SCRIPT = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
    b'width="40" height="20"><rect width="40" height="20" fill="#c33"/>'
    b"<script>document.title='ran'</script></svg>"
)


def test_a_chart_shows_its_png_and_serves_its_svg_sandboxed(auditor: Client) -> None:
    agent = _agent()
    folder = Path(agent.workspace) / ".synthorg" / "charts"
    folder.mkdir(parents=True)
    (folder / "c.png").write_bytes(PICTURE)
    (folder / "c.svg").write_bytes(SVG_WITH_SCRIPT)
    pictures = [
        {
            "label": "png",
            "path": ".synthorg/charts/c.png",
            "sha256": hashlib.sha256(PICTURE).hexdigest(),
        },
        {
            "label": "svg",
            "path": ".synthorg/charts/c.svg",
            "sha256": hashlib.sha256(SVG_WITH_SCRIPT).hexdigest(),
        },
    ]
    event = _tool_event(
        agent, "analytics.chart_render", pictures, tool="chart_render", category="analytics"
    )
    png = auditor.get(f"/audit/{event.id}/picture/")
    assert png["Content-Type"] == "image/png" and png.content == PICTURE
    svg = auditor.get(f"/audit/{event.id}/picture/?n=1")
    assert svg.status_code == 200 and svg.content == SVG_WITH_SCRIPT
    assert svg["Content-Type"] == "image/svg+xml"
    assert svg["X-Content-Type-Options"] == "nosniff"
    policy = [part.strip() for part in svg["Content-Security-Policy"].split(";")]
    assert "sandbox" in policy and "default-src 'none'" in policy
    assert not any("script" in part for part in policy)
    assert auditor.get(f"/audit/{event.id}/picture/?n=2").status_code == 404
    # A file called .svg that is not an SVG is not served as one.
    (folder / "c.svg").unlink()
    (folder / "c.svg").write_bytes(b"<html><script>1</script></html>")
    bad = _tool_event(
        agent,
        "analytics.chart_render",
        [{**pictures[1], "sha256": hashlib.sha256(b"<html><script>1</script></html>").hexdigest()}],
        tool="chart_render",
        category="analytics",
    )
    assert auditor.get(f"/audit/{bad.id}/picture/").status_code == 404


def test_the_calls_timeline_shows_its_pictures(auditor: Client) -> None:
    agent = _agent()
    call = uuid.uuid4()
    event = _tool_event(
        agent, "browser.screenshot", [_screenshot(agent, PICTURE)], invocation_id=call
    )
    page = auditor.get(f"/audit/invocations/{call}/").content.decode()
    assert f'<img src="/audit/{event.id}/picture/"' in page
    assert 'class="thumbnail"' in page
    _screenshot(agent, _png((1, 2, 3)))
    page = auditor.get(f"/audit/invocations/{call}/").content.decode()
    assert f'<img src="/audit/{event.id}/picture/"' not in page
    assert "changed since the call" in page


def test_pictures_after_the_first_are_theirs_alone() -> None:
    team_create(name="lab")
    team_create(name="desk")
    agent = _agent("lab")
    event = _tool_event(
        agent,
        "browser.diff",
        [
            {**_screenshot(agent, PICTURE, "base.png"), "label": "baseline", "path": "base.png"},
            {**_screenshot(agent, PICTURE, "diff-1.png"), "label": "diff"},
        ],
        tool="browser_diff",
    )
    (Path(agent.workspace) / "base.png").write_bytes(PICTURE)
    person_create(username="desk-auditor", role="auditor", password=None, team="desk")
    person_create(username="lab-auditor", role="auditor", password=None, team="lab")
    for index in (0, 1):
        url = f"/audit/{event.id}/picture/?n={index}"
        assert signed_in("desk-auditor").get(url).status_code == 404
        # Control: the auditor of the agent's own team.
        assert signed_in("lab-auditor").get(url).content == PICTURE
