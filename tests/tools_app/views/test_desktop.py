"""The Desktop panel of an agent's page, end to end: a daphne and a worker whose config has
a ``desktop`` section, a real session (Xvfb, xterm or xmessage, xdotool) started by the
agent's own calls, and people signed in through the login form.

People watch the picture the worker captures; the owner or an admin takes over (the
agent's desktop calls then fail ``desktop_taken_over``), types and presses keys that
reach the session, and hands back. Every refusal has its control beside it.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from celery import Celery
from django.conf import settings
from PIL import Image

from audit_app.models import AuditEvent
from common.platform.runtime import celery_broker_url
from common.testing import wait_until
from tests.support.pipeline import own_redis, pipeline_fixtures
from tests.support.web_node import sign_in, sign_in_form
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tools_app.models import DesktopTakeover
from tools_app.services.desktop_control import ACT_TASK
from trust_app.services.agents import person_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 7
WIDTH, HEIGHT = 640, 480
CONFIG: dict[str, Any] = {
    "desktop": {"width": WIDTH, "height": HEIGHT, "check_seconds": 0.5, "watch_seconds": 1}
}
TAKEN_OVER = "desktop_taken_over"
PASSWORD = "desk-panel-password-1"
CARD_PICTURE = re.compile(
    r'data-card-picture="0" data-state="(\w+)">.*?(?:<img src="([^"]+)"|</figure>)', re.S
)
PICTURE = re.compile(r'id="desktop-picture" src="([^"]+)"[^>]*data-sha256="([0-9a-f]{64})"')

pipeline, daphne_server, _settled = pipeline_fixtures("desktop-watch", CONFIG, redis_db=REDIS_DB)


class Browser(httpx.Client):
    """A signed-in person's browser, and who they are."""

    username = ""


@pytest.fixture
def people(daphne_server: str) -> Iterator[Callable[[str], Browser]]:
    """Sign a new person of ``role`` in to the configured daphne; their browser."""
    clients: list[Browser] = []

    def person(role: str) -> Browser:
        username = f"desk-{role}-{uuid.uuid4().hex[:8]}"
        person_create(username=username, role=role, password=PASSWORD)
        client = Browser(base_url=daphne_server, timeout=90)
        clients.append(client)
        token = sign_in_form(client, "/accounts/login/")
        signed = sign_in(client, "/accounts/login/", token, username, PASSWORD)
        assert signed.status_code == 302, signed.text[:500]
        client.username = username
        return client

    yield person
    for client in clients:
        client.close()


def _post(client: httpx.Client, path: str, data: dict[str, str] | None = None) -> httpx.Response:
    """A form post as the browser sends it: the CSRF token from the cookie, same origin."""
    token = client.cookies.get("csrftoken") or ""
    return client.post(
        path,
        data={"csrfmiddlewaretoken": token, **(data or {})},
        headers={"Referer": str(client.base_url) + path},
    )


def _call(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex, wait=60)
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    for _ in range(5):
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=60).json()
    return answer


def _succeeded(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = _call(client, tool, arguments)
    assert answer["status"] == "succeeded", (answer["error"], answer["result"])
    structured: dict[str, Any] = answer["result"]["structured"]
    return structured


def _panel_picture(person: httpx.Client, agent: AgentClient) -> tuple[str, str, str]:
    """Refresh the panel as the page does until it shows a picture: (page, src, digest)."""
    seen: dict[str, Any] = {}

    def shows() -> bool:
        page = person.get(f"/agents/{agent.agent.id}/desktop/")
        assert page.status_code == 200, page.text[:500]
        seen["page"] = page.text
        return PICTURE.search(page.text) is not None

    wait_until(shows, timeout=90, what="the panel to show the desktop", poll=1.0)
    found = PICTURE.search(seen["page"])
    assert found is not None
    return seen["page"], found.group(1), found.group(2)


def _file_says(path: Path, text: str) -> Callable[[], bool]:
    return lambda: path.is_file() and path.read_text(encoding="utf-8").strip() == text


def _events(agent: AgentClient, kind: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(agent_id=agent.agent.id, kind=kind).order_by("id"))


def test_the_panel_shows_the_sessions_own_picture(
    make_agent: Callable[..., AgentClient], people: Callable[[str], Browser]
) -> None:
    agent = make_agent("standard", autonomy="full")
    operator = people("operator")
    page = operator.get(f"/agents/{agent.agent.id}/")
    assert page.status_code == 200 and f'hx-get="/agents/{agent.agent.id}/desktop/"' in page.text
    _succeeded(agent, "desktop_launch", {"argv": ["xmessage", "watched"]})
    _, src, digest = _panel_picture(operator, agent)
    assert src == f"/agents/{agent.agent.id}/desktop/{digest}.png"
    # The page's refresh asks for the picture alone.
    live = operator.get(f"/agents/{agent.agent.id}/desktop/?part=live").text
    assert live.lstrip().startswith('<div id="desktop-live"') and PICTURE.search(live)
    picture = operator.get(src)
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
    assert hashlib.sha256(picture.content).hexdigest() == digest
    shown = Image.open(io.BytesIO(picture.content)).convert("RGB")
    assert shown.size == (WIDTH, HEIGHT)
    # The same screen as the agent's own screenshot of it (nothing moved in between).
    own = _succeeded(agent, "desktop_screenshot", {})
    taken = Image.open(Path(agent.agent.workspace) / own["path"]).convert("RGB")
    assert shown.tobytes() == taken.tobytes()
    # Control: another agent's screen (another window, another place) is another picture.
    other = make_agent("standard", autonomy="full")
    _succeeded(other, "desktop_launch", {"argv": ["xterm"]})
    _, _, other_digest = _panel_picture(operator, other)
    other_picture = operator.get(f"/agents/{other.agent.id}/desktop/{other_digest}.png").content
    assert Image.open(io.BytesIO(other_picture)).convert("RGB").tobytes() != shown.tobytes()
    # A digest the worker did not keep, or one kept for another agent, is no picture.
    assert operator.get(f"/agents/{agent.agent.id}/desktop/{'0' * 64}.png").status_code == 404
    assert operator.get(f"/agents/{agent.agent.id}/desktop/{other_digest}.png").status_code == 404


def test_an_admin_takes_over_types_into_xterm_and_hands_back(
    make_agent: Callable[..., AgentClient], people: Callable[[str], Browser]
) -> None:
    agent = make_agent("standard", autonomy="full")
    workspace = Path(agent.agent.workspace)
    admin = people("admin")
    admin_name = admin.username
    _succeeded(agent, "desktop_launch", {"argv": ["xterm"]})
    # Control: before the take-over, the agent's calls reach its desktop.
    _succeeded(agent, "desktop_type", {"text": "echo mine > mine.txt\n"})
    wait_until(_file_says(workspace / "mine.txt", "mine"), timeout=90, what="mine.txt")

    taken = _post(admin, f"/agents/{agent.agent.id}/desktop/take-over/")
    assert taken.status_code == 302, taken.text[:500]
    assert DesktopTakeover.objects.get(agent_id=agent.agent.id).person_name == admin_name
    [event] = _events(agent, "desktop.take_over")
    assert (event.actor_type, event.actor_name) == ("person", admin_name)

    refused = _call(agent, "desktop_type", {"text": "echo agent > agent.txt\n"})
    assert refused["status"] == "failed", refused
    assert refused["error"]["code"] == TAKEN_OVER and admin_name in refused["error"]["message"]
    page, _, _ = _panel_picture(admin, agent)
    assert "Taken over by" in page and admin_name in page and 'id="desktop-type"' in page

    # The person's typing is checked as an agent's is: a control character is refused.
    bell = _post(
        admin, f"/agents/{agent.agent.id}/desktop/act/", {"action": "type", "text": "a\x07"}
    )
    assert bell.status_code == 400 and "control character" in bell.text
    typed = _post(
        admin,
        f"/agents/{agent.agent.id}/desktop/act/",
        {"action": "type", "text": "echo person > person.txt"},
    )
    assert typed.status_code == 302, typed.text[:500]
    wait_until(lambda: len(_events(agent, "desktop.person_act")) == 1, timeout=90, what="typing")
    assert _events(agent, "desktop.person_act")[0].outcome == "done"
    pressed = _post(
        admin, f"/agents/{agent.agent.id}/desktop/act/", {"action": "key", "keys": "Return"}
    )
    assert pressed.status_code == 302, pressed.text[:500]
    wait_until(_file_says(workspace / "person.txt", "person"), timeout=90, what="person.txt")
    # The key's audit row is written once xdotool has answered: the file can come first.
    wait_until(lambda: len(_events(agent, "desktop.person_act")) == 2, timeout=90, what="key")
    acts = _events(agent, "desktop.person_act")
    assert [(e.actor_name, e.outcome, e.action_type) for e in acts] == [
        (admin_name, "done", "desktop:type"),
        (admin_name, "done", "desktop:key"),
    ]
    assert acts[0].data["text"] == "echo person > person.txt" and acts[0].actor_type == "person"
    # A click on the picture: the browser sends the point clicked on the image, which is
    # shown at the screen's own size; off the screen is refused.
    act = f"/agents/{agent.agent.id}/desktop/act/"
    off = _post(admin, act, {"action": "click", "at.x": str(WIDTH), "at.y": "5"})
    assert off.status_code == 400 and "x must be an integer" in off.text
    clicked = _post(admin, act, {"action": "click", "at.x": "321", "at.y": "45"})
    assert clicked.status_code == 302, clicked.text[:500]
    wait_until(lambda: len(_events(agent, "desktop.person_act")) == 3, timeout=90, what="click")
    click = _events(agent, "desktop.person_act")[2]
    assert (click.outcome, click.action_type) == ("done", "desktop:click")
    assert (click.data["x"], click.data["y"], click.data["button"]) == (321, 45, "left")
    assert not (workspace / "agent.txt").exists()

    handed = _post(admin, f"/agents/{agent.agent.id}/desktop/hand-back/")
    assert handed.status_code == 302, handed.text[:500]
    assert not DesktopTakeover.objects.filter(agent_id=agent.agent.id).exists()
    [back] = _events(agent, "desktop.hand_back")
    assert back.actor_name == admin_name and back.data["held_by"] == admin_name
    # Control: handed back, the agent's call runs again.
    _succeeded(agent, "desktop_type", {"text": "echo agent > agent.txt\n"})
    wait_until(_file_says(workspace / "agent.txt", "agent"), timeout=90, what="agent.txt")
    # And the person no longer acts on it.
    late = _post(admin, f"/agents/{agent.agent.id}/desktop/act/", {"action": "key", "keys": "a"})
    assert late.status_code == 409


def test_an_operator_watches_but_only_an_admin_or_the_owner_takes_over(
    make_agent: Callable[..., AgentClient], people: Callable[[str], Browser]
) -> None:
    operator = people("operator")
    agent = make_agent("standard", autonomy="full")
    _succeeded(agent, "desktop_launch", {"argv": ["xmessage", "look"]})
    page, _, _ = _panel_picture(operator, agent)
    assert "Watching only" in page and 'id="desktop-take-over"' not in page
    for path, data in (
        ("take-over/", {}),
        ("act/", {"action": "type", "text": "echo op > op.txt"}),
        ("hand-back/", {}),
    ):
        answer = _post(operator, f"/agents/{agent.agent.id}/desktop/{path}", data)
        assert answer.status_code == 403, (path, answer.status_code)
    assert not DesktopTakeover.objects.filter(agent_id=agent.agent.id).exists()
    assert _events(agent, "desktop.take_over") == []
    # Control: an admin takes over the same desktop.
    admin = people("admin")
    assert 'id="desktop-take-over"' in _panel_picture(admin, agent)[0]
    assert _post(admin, f"/agents/{agent.agent.id}/desktop/take-over/").status_code == 302
    assert DesktopTakeover.objects.filter(agent_id=agent.agent.id).exists()
    # Held by the admin, the operator still cannot hand it back, nor take it.
    assert _post(operator, f"/agents/{agent.agent.id}/desktop/hand-back/").status_code == 403
    # An operator who owns an agent takes over that agent's desktop.
    from django.contrib.auth import get_user_model

    owner = get_user_model().objects.get(username=operator.username)
    owned = make_agent("standard", autonomy="full", owner=owner)
    assert _post(operator, f"/agents/{owned.agent.id}/desktop/take-over/").status_code == 302
    assert DesktopTakeover.objects.get(agent_id=owned.agent.id).person_id == owner.pk


def test_a_desktop_calls_card_shows_the_screen_it_last_saw_and_its_target(
    make_agent: Callable[..., AgentClient], people: Callable[[str], Browser]
) -> None:
    from approvals_app.models import ApprovalRequest
    from trust_app.models import Agent

    agent = make_agent("standard", autonomy="full")
    operator = people("operator")
    _succeeded(agent, "desktop_launch", {"argv": ["xmessage", "card"]})
    shot = _succeeded(agent, "desktop_screenshot", {})
    # From now on a person decides the agent's clicks and typing (looking stays free).
    Agent.objects.filter(id=agent.agent.id).update(autonomy="supervised")

    def pending(tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
        sent = agent.call(tool, arguments, idempotency_key=uuid.uuid4().hex)
        assert sent.status_code in (200, 201), sent.text
        assert sent.json()["status"] == "pending_approval", sent.json()
        request = ApprovalRequest.objects.get(invocation_id=sent.json()["id"])
        page = operator.get(f"/approvals/{request.id}/call/")
        assert page.status_code == 200, page.text[:500]
        return str(request.id), page.text

    _, card = pending("desktop_click", {"x": 17, "y": 23, "button": "right"})
    assert "x=17, y=23" in card and "right click" in card
    assert "the screen the agent last saw" in card and shot["path"] in card
    found = CARD_PICTURE.search(card)
    assert found is not None and found.group(1) == "shown", card[-3000:]
    picture_url = html.unescape(found.group(2))
    picture = operator.get(picture_url)
    assert picture.status_code == 200
    assert hashlib.sha256(picture.content).hexdigest() == shot["sha256"]

    _, typed = pending("desktop_type", {"text": "rm -rf ~/notes"})
    assert "keystrokes (typed exactly)" in typed and "rm -rf ~/notes" in typed
    assert "the window holding the keyboard" in typed

    # A screenshot file changed since the agent saw it is not shown as what it saw.
    (Path(agent.agent.workspace) / shot["path"]).write_bytes(b"\x89PNG\r\n\x1a\nnot the screen")
    _, changed = pending("desktop_click", {"x": 1, "y": 1})
    assert "the screen the agent last saw" in changed and "Not shown" in changed
    found = CARD_PICTURE.search(changed)
    assert found is None or found.group(1) != "shown"
    assert operator.get(picture_url).status_code == 404


def test_a_persons_actions_run_in_the_order_they_were_made(
    make_agent: Callable[..., AgentClient], people: Callable[[str], Browser]
) -> None:
    agent = make_agent("standard", autonomy="full")
    workspace = Path(agent.agent.workspace)
    admin = people("admin")
    _succeeded(agent, "desktop_launch", {"argv": ["xterm"]})
    taken = _post(admin, f"/agents/{agent.agent.id}/desktop/take-over/")
    assert taken.status_code == 302, taken.text[:500]
    person_id = DesktopTakeover.objects.get(agent_id=agent.agent.id).person_id
    assert person_id is not None
    # Through the page, a person types and presses Return at once: each is numbered as
    # it is sent, whichever worker thread meets it first.
    act = f"/agents/{agent.agent.id}/desktop/act/"
    typed = _post(admin, act, {"action": "type", "text": "echo first > first.txt"})
    pressed = _post(admin, act, {"action": "key", "keys": "Return"})
    assert (typed.status_code, pressed.status_code) == (302, 302), pressed.text[:500]
    wait_until(_file_says(workspace / "first.txt", "first"), timeout=90, what="first.txt")
    wait_until(lambda: len(_events(agent, "desktop.person_act")) == 2, timeout=90, what="acts")
    assert DesktopTakeover.objects.get(agent_id=agent.agent.id).acts_done == 2

    # The attack: the key (number 4) reaches the worker before the text (number 3), as
    # when two worker threads meet them out of order. It waits for the text; run first,
    # Return would meet an empty line and the text would stay unsent.
    broker = Celery(broker=celery_broker_url(own_redis(settings.REDIS_URL, REDIS_DB)))

    def send(request: dict[str, str], sequence: int) -> None:
        broker.send_task(
            ACT_TASK, args=[str(agent.agent.id), str(person_id), request, sequence],
            queue="sandbox.namespace", ignore_result=True,
        )  # fmt: skip

    send({"action": "key", "keys": "Return"}, 4)
    time.sleep(2.0)  # the key has reached the worker and waits
    assert len(_events(agent, "desktop.person_act")) == 2, "nothing ran out of turn"
    send({"action": "type", "text": "echo second > second.txt"}, 3)
    wait_until(_file_says(workspace / "second.txt", "second"), timeout=90, what="second.txt")
    wait_until(lambda: len(_events(agent, "desktop.person_act")) == 4, timeout=90, what="acts")
    acts = _events(agent, "desktop.person_act")
    assert [e.action_type for e in acts[2:]] == ["desktop:type", "desktop:key"]
    assert [e.outcome for e in acts] == ["done"] * 4
    assert DesktopTakeover.objects.get(agent_id=agent.agent.id).acts_done == 4

    # An earlier action lost with its worker is not waited for past the bound (10 s):
    # number 9 runs although 5 to 8 never came.
    send({"action": "type", "text": "echo third > third.txt\n"}, 9)
    wait_until(_file_says(workspace / "third.txt", "third"), timeout=90, what="third.txt")
    wait_until(
        lambda: DesktopTakeover.objects.get(agent_id=agent.agent.id).acts_done == 9,
        timeout=30, what="number 9 done",
    )  # fmt: skip
    broker.close()
    handed = _post(admin, f"/agents/{agent.agent.id}/desktop/hand-back/")
    assert handed.status_code == 302, handed.text[:500]
