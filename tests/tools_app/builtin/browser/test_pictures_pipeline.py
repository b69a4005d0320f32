"""Screenshots, diffs and charts shown as pictures where people look, end to end: a daphne
and a worker with the browser and analytics sections, a workspace quota, and a rule that
asks a person for every ``browser_diff``.

The pictures stay in the agent's workspace; the audit rows name them with their SHA-256;
the audit event page, the call's timeline and the approval card show them only while the
file is still those bytes. Each attack has its control beside it.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from audit_app.models import AuditEvent
from tests.common.permission_suite import signed_in
from tests.support.pipeline import pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tools_app.quota.usage import workspace_usage
from trust_app.models import AgentPermissions
from trust_app.services.agents import person_create, person_token_issue
from trust_app.services.teams import team_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 3
QUOTA = 1024 * 1024
CONFIG: dict[str, Any] = {
    "browser": {"default_timeout_seconds": 60},
    "analytics": {},
    "sandboxing": {"workspace_quota": "1m"},
    "approval": {
        "rules": [
            {
                "name": "diffs-ask",
                "match": {"tool": "browser_diff"},
                "disposition": "require_approval",
            }
        ]
    },
}
HTML = {"Content-Type": "text/html; charset=utf-8"}
PAGE = b"""<!doctype html><html><head><title>Pricing</title></head>
<body style="margin:0;background:#fff"><h1 style="color:#123">Plans</h1>
<div style="width:200px;height:80px;background:#2a6"></div></body></html>"""
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pipeline, daphne_server, _settled = pipeline_fixtures(
    "pictures-pipeline", CONFIG, redis_db=REDIS_DB
)


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer() as server:
        server.route("/pricing", Reply(200, HTML, PAGE))
        yield server


@pytest.fixture
def teams() -> None:
    team_create(name="studio")
    team_create(name="ops")
    for role in ("auditor", "operator"):
        person_create(username=f"studio-{role}", role=role, password=None, team="studio")
        person_create(username=f"ops-{role}", role=role, password=None, team="ops")


def _agent(make: Callable[..., AgentClient], site: LoopbackHttpServer) -> AgentClient:
    client = make("standard", autonomy="full", team="studio")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={"network": "allowlist_only", "allowed_hosts": [f"127.0.0.1:{site.port}"]},
    )
    return client


def _call(client: AgentClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    # Answered at once (a call asking a person would hold a waiting answer to its end);
    # a queued or running call is then waited for.
    response = client.call(tool, arguments, idempotency_key=uuid.uuid4().hex, wait=0)
    assert response.status_code in (200, 201), response.text
    answer: dict[str, Any] = response.json()
    for _ in range(5):  # a loaded machine: wait as long as a person would
        if answer["status"] not in ("queued", "running"):
            break
        answer = client.get(answer["id"], wait=60).json()
    return answer


def _screenshot(client: AgentClient, site: LoopbackHttpServer) -> dict[str, Any]:
    answer = _call(
        client,
        "browser_screenshot",
        {"url": site.url("/pricing"), "viewport": {"width": 320, "height": 200}},
    )
    assert answer["status"] == "succeeded", answer.get("error")
    return answer


def _row(invocation_id: str, kind: str) -> AuditEvent:
    return AuditEvent.objects.get(invocation_id=invocation_id, kind=kind)


def test_a_screenshot_is_shown_on_its_event_and_timeline_to_its_team_only(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer, teams: None
) -> None:
    client = _agent(make_agent, site)
    answer = _screenshot(client, site)
    result = answer["result"]["structured"]
    stored = (Path(client.agent.workspace) / result["path"]).read_bytes()
    assert stored.startswith(PNG_MAGIC) and hashlib.sha256(stored).hexdigest() == result["sha256"]
    row = _row(answer["id"], "browser.screenshot")
    assert row.data["pictures"][0]["path"] == result["path"]

    auditor = signed_in("studio-auditor")
    page = auditor.get(f"/audit/{row.id}/").content.decode()
    assert f'<img src="/audit/{row.id}/picture/"' in page
    timeline = auditor.get(f"/audit/invocations/{answer['id']}/").content.decode()
    assert f'<img src="/audit/{row.id}/picture/"' in timeline
    served = auditor.get(f"/audit/{row.id}/picture/")
    assert served.status_code == 200 and served.content == stored
    assert served["Content-Type"] == "image/png"
    assert served["X-Content-Type-Options"] == "nosniff"
    # Another team's auditor gets neither the event nor its picture; an operator no
    # audit page at all.
    assert signed_in("ops-auditor").get(f"/audit/{row.id}/picture/").status_code == 404
    assert signed_in("ops-auditor").get(f"/audit/{row.id}/").status_code == 404
    assert signed_in("studio-operator").get(f"/audit/{row.id}/picture/").status_code == 403


def test_a_swapped_screenshot_or_a_link_in_its_place_is_not_shown(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer, teams: None
) -> None:
    client = _agent(make_agent, site)
    answer = _screenshot(client, site)
    path = Path(client.agent.workspace) / answer["result"]["structured"]["path"]
    row = _row(answer["id"], "browser.screenshot")
    auditor = signed_in("studio-auditor")
    original = path.read_bytes()
    # Control: as taken, it is shown.
    assert auditor.get(f"/audit/{row.id}/picture/").content == original

    # Swapped for other bytes (another screenshot of the agent's): the page says so.
    other = _screenshot(client, site)
    other_path = Path(client.agent.workspace) / other["result"]["structured"]["path"]
    path.unlink()
    path.write_bytes(original[:-12] + b"\0" * 12)
    page = auditor.get(f"/audit/{row.id}/").content.decode()
    assert "changed since the call" in page
    assert f'<img src="/audit/{row.id}/picture/"' not in page
    assert auditor.get(f"/audit/{row.id}/picture/").status_code == 404

    # A link to a file with the very bytes recorded, put in its place: not followed.
    copy = Path(client.agent.workspace) / "copy.png"
    copy.write_bytes(original)
    path.unlink()
    os.symlink(copy, path)
    page = auditor.get(f"/audit/{row.id}/").content.decode()
    assert "not followed" in page
    assert auditor.get(f"/audit/{row.id}/picture/").status_code == 404
    # Control: the other screenshot, untouched, is still shown.
    other_row = _row(other["id"], "browser.screenshot")
    assert auditor.get(f"/audit/{other_row.id}/picture/").content == other_path.read_bytes()


def test_a_diff_waiting_for_a_person_shows_its_baseline_and_keeps_three_pictures(
    make_agent: Callable[..., AgentClient],
    site: LoopbackHttpServer,
    teams: None,
    daphne_server: str,
) -> None:
    client = _agent(make_agent, site)
    baseline = _screenshot(client, site)["result"]["structured"]
    asked = _call(
        client, "browser_diff", {"baseline": baseline["path"], "url": site.url("/pricing")}
    )
    assert asked["status"] == "pending_approval", asked
    request_id = asked["approval"]["id"]

    operator = signed_in("studio-operator")
    inbox = operator.get("/approvals/").content.decode()
    src = f"/approvals/{request_id}/picture/"
    assert f'src="{src}"' in inbox
    shown = operator.get(src)
    assert shown.status_code == 200 and shown["Content-Type"] == "image/png"
    assert shown.content == (Path(client.agent.workspace) / baseline["path"]).read_bytes()
    assert shown["X-Content-Type-Options"] == "nosniff"
    # Another team's operator sees neither the request nor its picture.
    assert signed_in("ops-operator").get(src).status_code == 404

    # A person decides it; the diff keeps the baseline, the new screenshot and the diff.
    person = person_create(
        username="studio-approver", role="operator", password=None, team="studio"
    )
    with httpx.Client(
        base_url=daphne_server,
        headers={"Authorization": f"Bearer {person_token_issue(person=person)}"},
        timeout=60,
    ) as http:
        decided = http.post(
            f"/api/v1/approvals/{request_id}/decide/",
            json={"decision": "approve", "reason": "compare it"},
        )
    assert decided.status_code == 200, decided.text
    done = client.get(asked["id"], wait=60).json()
    for _ in range(5):
        if done["status"] not in ("queued", "running"):
            break
        done = client.get(asked["id"], wait=60).json()
    assert done["status"] == "succeeded", done
    row = _row(asked["id"], "browser.diff")
    labels = [p["label"] for p in row.data["pictures"]]
    assert labels == ["baseline", "candidate", "diff"]
    auditor = signed_in("studio-auditor")
    for index, picture in enumerate(row.data["pictures"]):
        served = auditor.get(f"/audit/{row.id}/picture/?n={index}")
        assert served.status_code == 200, picture
        assert served.content == (Path(client.agent.workspace) / picture["path"]).read_bytes()

    # The card of a new diff against a baseline swapped since: not shown, said why.
    (Path(client.agent.workspace) / baseline["path"]).unlink()
    (Path(client.agent.workspace) / baseline["path"]).write_bytes(b"\x89PNG\r\n\x1a\nswapped")
    again = _call(
        client, "browser_diff", {"baseline": baseline["path"], "url": site.url("/pricing")}
    )
    assert again["status"] == "pending_approval", again
    inbox = operator.get("/approvals/").content.decode()
    assert f'src="/approvals/{again["approval"]["id"]}/picture/"' not in inbox
    assert "changed since the call" in inbox
    assert operator.get(f"/approvals/{again['approval']['id']}/picture/").status_code == 404
    client.http.post(f"/api/v1/invocations/{again['id']}/cancel/")


def test_a_chart_is_shown_as_a_png_and_its_svg_served_sandboxed(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer, teams: None
) -> None:
    client = _agent(make_agent, site)
    rows = [{"month": "Jan", "revenue": 10}, {"month": "Feb", "revenue": 12}]
    answer = _call(
        client,
        "chart_render",
        {"data": rows, "kind": "bar", "x": "month", "y": "revenue", "title": "Revenue"},
    )
    assert answer["status"] == "succeeded", answer.get("error")
    structured = answer["result"]["structured"]
    row = _row(answer["id"], "analytics.chart_render")
    auditor = signed_in("studio-auditor")
    page = auditor.get(f"/audit/{row.id}/").content.decode()
    assert f'<img src="/audit/{row.id}/picture/"' in page
    png = auditor.get(f"/audit/{row.id}/picture/")
    assert png["Content-Type"] == "image/png" and png.content.startswith(PNG_MAGIC)
    assert hashlib.sha256(png.content).hexdigest() == structured["png"]["sha256"]
    svg = auditor.get(f"/audit/{row.id}/picture/?n=1")
    assert svg.status_code == 200 and svg["Content-Type"] == "image/svg+xml"
    assert "sandbox" in svg["Content-Security-Policy"]
    assert hashlib.sha256(svg.content).hexdigest() == structured["svg"]["sha256"]
    assert signed_in("ops-auditor").get(f"/audit/{row.id}/picture/?n=1").status_code == 404


def test_a_screenshot_past_the_workspace_quota_is_refused_and_nothing_kept(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer, teams: None
) -> None:
    client = _agent(make_agent, site)
    workspace = Path(client.agent.workspace)
    # Control: under the quota, the screenshot is kept.
    _screenshot(client, site)
    folder = workspace / ".synthorg" / "screenshots"
    kept = sorted(folder.iterdir())
    # The workspace filled to a few hundred bytes under its quota.
    left = 300
    (workspace / "filler.bin").write_bytes(
        b"\0" * (QUOTA - workspace_usage(workspace).total - left)
    )
    refused = _call(
        client,
        "browser_screenshot",
        {"url": site.url("/pricing"), "viewport": {"width": 320, "height": 200}},
    )
    assert refused["status"] == "failed", refused
    assert refused["error"]["code"] == "LIMIT_EXCEEDED", refused
    assert "workspace_quota" in refused["error"]["message"], refused
    assert sorted(folder.iterdir()) == kept
    assert workspace_usage(workspace).total <= QUOTA
    assert not AuditEvent.objects.filter(invocation_id=refused["id"], kind="browser.screenshot")


def test_file_pages_through_the_api_only_inside_the_workspace(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer, teams: None
) -> None:
    client = _agent(make_agent, site)
    workspace = Path(client.agent.workspace)
    (workspace / "site").mkdir()
    (workspace / "site" / "index.html").write_text(
        "<title>Local</title><p>A page of the agent's own.</p>"
    )
    os.symlink("/etc/passwd", workspace / "site" / "passwd.html")
    for url in (
        "file:///etc/passwd",
        "file:///workspace/../etc/passwd",
        "file:///workspace/%2e%2e/etc/passwd",
        "file://otherhost/workspace/site/index.html",
    ):
        refused = _call(client, "browser_navigate", {"url": url})
        assert refused["status"] == "denied", (url, refused)
        assert "root:" not in str(refused)
    # A link out of the workspace is refused before the browser reads anything.
    linked = _call(client, "browser_navigate", {"url": "file:///workspace/site/passwd.html"})
    assert linked["status"] in ("denied", "failed"), linked
    assert "root:" not in str(linked)
    # Control: the agent's own page in its workspace, through the same API.
    allowed = _call(client, "browser_navigate", {"url": "file:///workspace/site/index.html"})
    assert allowed["status"] == "succeeded", allowed
    assert "A page of the agent's own." in allowed["result"]["structured"]["text"]
