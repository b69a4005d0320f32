"""The pictures an approval card shows: one the call names that an earlier call of the same
agent kept (checked against the SHA-256 its audit row recorded), and the SVG a
``mockup_render`` asked about would draw, served sandboxed; only to the people who may
decide the request."""

from __future__ import annotations

import hashlib
import io
import uuid
from pathlib import Path

import pytest
from django.db import transaction
from PIL import Image

from audit_app.record import Actor, audit_record
from tests.common.permission_suite import signed_in
from tests.support.pending import pending_like, submitted
from tools_app.models import Invocation
from trust_app.models import Agent
from trust_app.services.agents import agent_create, person_create
from trust_app.services.teams import team_create

pytestmark = pytest.mark.django_db

SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20">'
    b"<rect width='40' height='20' fill='#36c'/><script>parent.alert(1)</script></svg>"
)


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), colour).save(buffer, "PNG")
    return buffer.getvalue()


PICTURE = _png((10, 120, 40))


def _agent() -> Agent:
    name = f"designer-{uuid.uuid4().hex[:6]}"
    return agent_create(name=name, access_level="standard", autonomy="locked", team="studio").agent


def _kept(agent: Agent, path: str, data: bytes) -> None:
    """A diff call of ``agent`` that recorded ``path`` as its baseline."""
    with transaction.atomic():
        audit_record(
            kind="browser.diff",
            actor=Actor.agent(agent),
            agent=agent,
            tool="browser_diff",
            category="browser",
            action_type="browser:diff",
            outcome="stored",
            data={
                "pictures": [
                    {"label": "baseline", "path": path, "sha256": hashlib.sha256(data).hexdigest()}
                ]
            },
        )


@pytest.fixture(autouse=True)
def _teams() -> None:
    team_create(name="studio")
    team_create(name="ops")
    person_create(username="studio-op", role="operator", password=None, team="studio")
    person_create(username="ops-op", role="operator", password=None, team="ops")


def test_a_card_shows_the_picture_its_call_depends_on_as_the_agent_kept_it() -> None:
    agent = _agent()
    (Path(agent.workspace) / "shot.png").write_bytes(PICTURE)
    _kept(agent, "shot.png", PICTURE)
    request = submitted(agent, "write_file", {"path": "shot.png", "content": "replaced"})
    operator = signed_in("studio-op")
    page = operator.get(f"/approvals/{request.id}/call/").content.decode()
    assert f'<img src="/approvals/{request.id}/picture/"' in page
    served = operator.get(f"/approvals/{request.id}/picture/")
    assert served.status_code == 200 and served.content == PICTURE
    assert served["Content-Type"] == "image/png"
    assert served["X-Content-Type-Options"] == "nosniff"
    # Another team's operator: neither the request nor its picture.
    assert signed_in("ops-op").get(f"/approvals/{request.id}/picture/").status_code == 404

    # The file swapped since: the card says so and shows nothing.
    (Path(agent.workspace) / "shot.png").write_bytes(_png((200, 0, 0)))
    page = operator.get(f"/approvals/{request.id}/call/").content.decode()
    assert f'<img src="/approvals/{request.id}/picture/"' not in page
    assert "changed since the call" in page
    assert operator.get(f"/approvals/{request.id}/picture/").status_code == 404


def test_a_picture_another_agent_kept_is_not_shown_on_this_agents_card() -> None:
    agent, other = _agent(), _agent()
    (Path(agent.workspace) / "theirs.png").write_bytes(PICTURE)
    _kept(other, "theirs.png", PICTURE)  # the same name and bytes, in another agent's row
    request = submitted(agent, "write_file", {"path": "theirs.png", "content": "x"})
    operator = signed_in("studio-op")
    page = operator.get(f"/approvals/{request.id}/call/").content.decode()
    assert f'<img src="/approvals/{request.id}/picture/"' not in page
    assert "no earlier call of this agent recorded this picture" in page
    assert operator.get(f"/approvals/{request.id}/picture/").status_code == 404
    # Control: once this agent's own call kept it, it is shown.
    _kept(agent, "theirs.png", PICTURE)
    assert operator.get(f"/approvals/{request.id}/picture/").content == PICTURE


def test_a_mockup_asked_about_shows_its_svg_sandboxed() -> None:
    agent = _agent()
    first = submitted(agent, "write_file", {"path": "a.txt", "content": "x"})
    (asked,) = pending_like(first, 1, lambda _n: {"svg": SVG.decode()})
    Invocation.objects.filter(approval__id=asked).update(tool="mockup_render")
    operator = signed_in("studio-op")
    page = operator.get(f"/approvals/{asked}/call/").content.decode()
    assert f'<img src="/approvals/{asked}/picture/"' in page
    served = operator.get(f"/approvals/{asked}/picture/")
    assert served.status_code == 200 and served.content == SVG
    assert served["Content-Type"] == "image/svg+xml"
    policy = [part.strip() for part in served["Content-Security-Policy"].split(";")]
    assert "sandbox" in policy and "default-src 'none'" in policy
    assert served["X-Content-Type-Options"] == "nosniff"
    # Control: the write beside it depends on no picture.
    assert operator.get(f"/approvals/{first.id}/picture/").status_code == 404
