"""Pictures on audit pages in Chromium: an SVG a tool kept runs none of its script, shown
on the event page or opened on its own (served sandboxed); the same SVG served plainly
by a loopback server of the test's own runs it (the control)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction

from audit_app.record import Actor, audit_record
from common.testing import wait_until
from tests.browser.test_audit_pages import open_as
from tests.tools_app.net.servers import LoopbackHttpServer, Reply
from trust_app.services.agents import agent_create

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def beacon() -> Iterator[LoopbackHttpServer]:
    """Counts the requests a script that ran would make."""
    with LoopbackHttpServer() as server:
        server.route("/ran", Reply(204))
        yield server


def _svg(beacon: LoopbackHttpServer) -> bytes:
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<svg xmlns="http://www.w3.org/2000/svg" width="60" height="30">'
        '<rect width="60" height="30" fill="#2a6"/>'
        f'<script>fetch("{beacon.url("/ran")}", {{mode: "no-cors"}})</script></svg>'
    ).encode()


def _chart_event(svg: bytes) -> int:
    agent = agent_create(name=f"charts-{uuid.uuid4().hex[:6]}", access_level="standard").agent
    folder = Path(agent.workspace) / ".synthorg" / "charts"
    folder.mkdir(parents=True)
    (folder / "c.svg").write_bytes(svg)
    with transaction.atomic():
        event = audit_record(
            kind="analytics.chart_render",
            actor=Actor.agent(agent),
            agent=agent,
            tool="chart_render",
            category="analytics",
            action_type="docs:write",
            outcome="stored",
            data={
                "pictures": [
                    {
                        "label": "svg",
                        "path": ".synthorg/charts/c.svg",
                        "sha256": hashlib.sha256(svg).hexdigest(),
                    }
                ]
            },
        )
    return int(event.id)


def test_an_svg_with_a_script_never_runs_it_from_the_console(
    browser: Any, daphne_server: str, beacon: LoopbackHttpServer
) -> None:
    svg = _svg(beacon)
    event_id = _chart_event(svg)
    page = open_as(browser, daphne_server, "auditor", 1280, f"/audit/{event_id}/")
    # Shown on the event page as an image: drawn, its script not run.
    drawn = page.locator(f'img[src="/audit/{event_id}/picture/"]')
    wait_until(
        lambda: drawn.evaluate("i => i.complete && i.naturalWidth > 0"),
        timeout=30,
        what="the SVG drawn on the event page",
    )
    # Opened on its own (a link or a typed address): a sandboxed document, no script.
    answer = page.goto(f"{daphne_server}/audit/{event_id}/picture/")
    assert answer is not None and answer.status == 200
    assert "sandbox" in answer.headers["content-security-policy"]
    page.wait_for_timeout(1500)
    assert beacon.count() == 0

    # Control: the same bytes served plainly run their script in the same browser.
    with LoopbackHttpServer() as plain:
        plain.route("/c.svg", Reply(200, {"Content-Type": "image/svg+xml"}, svg))
        page.goto(plain.url("/c.svg"))
        wait_until(lambda: beacon.count() > 0, timeout=30, what="the plain SVG's script")
    page.context.close()
