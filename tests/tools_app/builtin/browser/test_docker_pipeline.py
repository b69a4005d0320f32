"""The browser tools end to end on the docker backend: ``sandboxing.overrides.browser:
docker``, a daphne and a worker of this module's own.

Chromium runs in a fresh container of the GUI image per call, its only way out the
egress proxy's socket bound into that container, decided by the agent's grant. The
pages are the test's own, served on loopback.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.pipeline import call_ended, pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from tests.tools_app.sandbox.conftest import docker_engine
from tools_app.models import Invocation
from tools_app.sandbox.backends.docker.image import build_gui_image
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 3
CONFIG: dict[str, Any] = {
    "browser": {"default_timeout_seconds": 60},
    "sandboxing": {"overrides": {"browser": "docker"}},
}
HTML = {"Content-Type": "text/html; charset=utf-8"}
PAGE = b"""<!doctype html><html><head><title>Quarterly report</title></head>
<body style="background:#ffffff;color:#111111"><h1>Revenue grew</h1>
<p>Revenue grew by four percent this quarter.</p><a href="/details">Read the details</a>
</body></html>"""


@pytest.fixture(scope="module", autouse=True)
def gui_image() -> None:
    """The GUI image is in the engine before the worker's first browser call."""
    client = docker_engine()
    build_gui_image(client=client)
    client.close()


pipeline, daphne_server, _settled = pipeline_fixtures(
    "browser-docker-pipeline", CONFIG, redis_db=REDIS_DB
)


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer() as server:
        server.route("/report", Reply(200, HTML, PAGE))
        server.route("/details", Reply(200, HTML, b"<title>Details</title><p>details</p>"))
        yield server


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[LoopbackHttpServer]:
    """A loopback server outside every grant: nothing may reach it."""
    with LoopbackHttpServer() as server:
        server.route("/secret", Reply(200, HTML, b"<title>Secret</title><p>internal</p>"))
        yield server


def _browser_agent(make: Callable[..., AgentClient], ports: list[int]) -> AgentClient:
    client = make("standard", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={
            "network": "allowlist_only",
            "allowed_hosts": [f"127.0.0.1:{port}" for port in ports],
        },
    )
    return client


def test_navigate_reads_a_granted_page_through_the_egress_proxy_in_a_container(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer
) -> None:
    client = _browser_agent(make_agent, [site.port])
    before = site.count("/report")
    answer = call_ended(client, "browser_navigate", {"url": site.url("/report")})
    assert answer["status"] == "succeeded", answer
    result = answer["result"]["structured"]
    assert (result["title"], result["status"]) == ("Quarterly report", 200)
    assert "Revenue grew by four percent this quarter." in result["text"]
    assert {"text": "Read the details", "url": site.url("/details")} in result["links"]
    assert site.count("/report") == before + 1
    assert Invocation.objects.get(id=answer["id"]).backend == "docker"


def test_a_granted_page_cannot_make_the_browser_reach_outside_the_grant(
    make_agent: Callable[..., AgentClient],
    site: LoopbackHttpServer,
    elsewhere: LoopbackHttpServer,
) -> None:
    secret = elsewhere.url("/secret")
    site.route(
        "/embeds",
        Reply(
            200,
            HTML,
            f"""<title>Embeds</title><p>embedding page</p><img src="{secret}?img">
            <iframe src="{secret}?frame"></iframe>
            <script>fetch("{secret}?fetch").catch(() => 0);</script>""".encode(),
        ),
    )
    site.route("/moved", Reply(302, {"Location": secret}))
    client = _browser_agent(make_agent, [site.port])
    embedded = call_ended(client, "browser_navigate", {"url": site.url("/embeds")})
    # Control: the granted page itself loads.
    assert embedded["status"] == "succeeded", embedded
    assert "embedding page" in embedded["result"]["structured"]["text"]
    moved = call_ended(client, "browser_navigate", {"url": site.url("/moved")})
    assert moved["status"] == "failed", moved
    assert moved["error"]["code"] == "NAVIGATION_FAILED", moved
    assert "internal" not in str(moved)
    assert elsewhere.count() == 0


def test_screenshot_is_a_png_in_the_workspace_with_its_digest(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer
) -> None:
    client = _browser_agent(make_agent, [site.port])
    answer = call_ended(
        client,
        "browser_screenshot",
        {"url": site.url("/report"), "viewport": {"width": 640, "height": 480}},
    )
    assert answer["status"] == "succeeded", answer
    result = answer["result"]["structured"]
    assert result["path"].startswith(".synthorg/screenshots/") and result["path"].endswith(".png")
    assert (result["width"], result["height"]) == (640, 480)
    stored = (Path(client.agent.workspace) / result["path"]).read_bytes()
    assert stored.startswith(b"\x89PNG\r\n\x1a\n")
    assert hashlib.sha256(stored).hexdigest() == result["sha256"]


def test_an_agent_without_a_network_grant_reaches_nothing(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer
) -> None:
    client = make_agent("standard", autonomy="full")
    AgentPermissions.objects.create(agent=client.agent, sub_constraints={"network": "none"})
    before = site.count()
    answer = call_ended(client, "browser_navigate", {"url": site.url("/report")})
    assert answer["status"] == "denied", answer
    assert site.count() == before
    # Control: an agent granted the server reads it, on the same worker.
    granted = _browser_agent(make_agent, [site.port])
    assert call_ended(granted, "browser_navigate", {"url": site.url("/details")})["status"] == (
        "succeeded"
    )
