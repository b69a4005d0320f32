"""``browser_accessibility_scan``, ``browser_spec`` and ``browser_diff`` end to end: a
daphne and a worker whose config has a ``browser`` section, pages served on loopback
by the test's own server, reached through the egress proxy and the agent's grant."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.support.pipeline import call_ended, pipeline_fixtures
from tests.tools_app.api import conftest as api_fixtures
from tests.tools_app.api.conftest import AgentClient
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from trust_app.models import AgentPermissions

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

make_agent = api_fixtures.make_agent
REDIS_DB = 3
CONFIG: dict[str, Any] = {"browser": {"default_timeout_seconds": 60}}
HTML = {"Content-Type": "text/html; charset=utf-8"}

FAULTY = b"""<!doctype html><html lang="en"><head><title>Signup</title></head>
<body><main><h1>Sign up</h1><img id="logo" src="/logo.gif">
<input id="email" type="text"></main></body></html>"""
CLEAN = b"""<!doctype html><html lang="en"><head><title>Signup</title></head>
<body><main><h1>Sign up</h1><img id="logo" src="/logo.gif" alt="Shop logo">
<label for="email">Email</label><input id="email" type="text"></main></body></html>"""
GIF = base64.b64decode("R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==")
BANNER = """<!doctype html><html><head><title>Home</title></head>
<body style="margin:0;background:#fff"><div style="position:absolute;left:40px;top:60px;
width:240px;height:120px;background:{}"></div></body></html>"""

pipeline, daphne_server, _settled = pipeline_fixtures(
    "browser-checks-pipeline", CONFIG, redis_db=REDIS_DB
)


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackHttpServer]:
    with LoopbackHttpServer() as server:
        server.route("/faulty", Reply(200, HTML, FAULTY))
        server.route("/clean", Reply(200, HTML, CLEAN))
        server.route("/logo.gif", Reply(200, {"Content-Type": "image/gif"}, GIF))
        yield server


def _browser_agent(make: Callable[..., AgentClient], port: int) -> AgentClient:
    client = make("standard", autonomy="full")
    AgentPermissions.objects.create(
        agent=client.agent,
        sub_constraints={"network": "allowlist_only", "allowed_hosts": [f"127.0.0.1:{port}"]},
    )
    return client


def test_axe_finds_the_seeded_violations_and_none_on_the_clean_page(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer
) -> None:
    client = _browser_agent(make_agent, site.port)
    faulty = call_ended(client, "browser_accessibility_scan", {"url": site.url("/faulty")})
    assert faulty["status"] == "succeeded", faulty
    found = faulty["result"]["structured"]
    impacts = {rule["id"]: rule["impact"] for rule in found["violations"]}
    assert impacts.get("image-alt") == "critical", impacts
    assert impacts.get("label") == "critical", impacts
    assert found["counts"]["critical"] >= 2
    # Control: the same form with alt text and a label.
    clean = call_ended(client, "browser_accessibility_scan", {"url": site.url("/clean")})
    assert clean["status"] == "succeeded", clean
    assert clean["result"]["structured"]["violations"] == []
    assert sum(clean["result"]["structured"]["counts"].values()) == 0


def test_spec_checks_pass_and_fail_on_a_served_page(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer
) -> None:
    client = _browser_agent(make_agent, site.port)
    checks = [
        {"kind": "status", "equals": 200},
        {"kind": "status", "equals": 404},
        {"kind": "attribute", "selector": "#logo", "name": "alt", "equals": "Shop logo"},
        {"kind": "visible", "selector": "label[for=email]"},
        {"kind": "text", "contains": "Checkout"},
        {"kind": "no_console_errors"},
    ]
    answer = call_ended(client, "browser_spec", {"url": site.url("/clean"), "checks": checks})
    assert answer["status"] == "succeeded", answer
    result = answer["result"]["structured"]
    assert [v["passed"] for v in result["checks"]] == [True, False, True, True, False, True]
    assert result["passed"] is False
    # Control: the same page without the failing checks passes as a whole.
    kept = [checks[0], checks[2], checks[3], checks[5]]
    answer = call_ended(client, "browser_spec", {"url": site.url("/clean"), "checks": kept})
    assert answer["status"] == "succeeded", answer
    assert answer["result"]["structured"]["passed"] is True, answer["result"]["structured"]
    # A resource of the page's own that fails to load is a console error (the favicon
    # the browser asks for by itself, missing on this server too, is not).
    site.route("/broken", Reply(200, HTML, CLEAN.replace(b"/logo.gif", b"/missing.gif")))
    broken = call_ended(client, "browser_spec", {"url": site.url("/broken"), "checks": [checks[5]]})
    assert broken["status"] == "succeeded", broken
    verdict = broken["result"]["structured"]["checks"][0]
    assert verdict["passed"] is False and "404" in verdict["detail"], verdict


def test_screenshot_then_diff_against_the_page_unchanged_and_changed(
    make_agent: Callable[..., AgentClient], site: LoopbackHttpServer
) -> None:
    site.route("/home", Reply(200, HTML, BANNER.format("#2a6f2a").encode()))
    client = _browser_agent(make_agent, site.port)
    shot = call_ended(
        client,
        "browser_screenshot",
        {"url": site.url("/home"), "viewport": {"width": 480, "height": 320}},
    )
    assert shot["status"] == "succeeded", shot
    baseline = shot["result"]["structured"]["path"]
    same = call_ended(client, "browser_diff", {"baseline": baseline, "url": site.url("/home")})
    assert same["status"] == "succeeded", same
    assert same["result"]["structured"]["ssim"] >= 0.99
    assert same["result"]["structured"]["changed"] is False
    site.route("/home", Reply(200, HTML, BANNER.format("#d03030").encode()))
    changed = call_ended(client, "browser_diff", {"baseline": baseline, "url": site.url("/home")})
    assert changed["status"] == "succeeded", changed
    result = changed["result"]["structured"]
    assert result["changed"] is True
    assert [(r["x"], r["y"]) for r in result["regions"]] == [(40, 60)], result["regions"]
    # A baseline outside the workspace is denied before anything runs.
    before = len(site.requests)
    refused = call_ended(
        client, "browser_diff", {"baseline": "/etc/passwd", "url": site.url("/home")}
    )
    assert refused["status"] == "denied", refused
    assert "root:" not in str(refused)
    assert len(site.requests) == before
