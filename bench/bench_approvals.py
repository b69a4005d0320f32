"""Push latency of the operators' inbox: an agent's call to the operator's screen.

Starts a real daphne against the database and Redis in the environment. An agent
under the locked autonomy preset calls read_file, so every call waits for an
operator; nothing runs, so no worker is needed. Measures, from the moment the
call's row is inserted (its ``created_at``, a little before the commit):
- to the websocket frame carrying the new request at a signed-in operator's
  socket, p50/p95 over 200 calls (goal: p95 at most 50 ms);
- to the request's row being in the DOM of the inbox in Chromium, p50 over 50
  calls (goal: p50 at most 200 ms).
Both are upper bounds of the latency from the commit.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402
import websockets  # noqa: E402
from websockets.typing import Origin  # noqa: E402

from bench.inbox import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    ROW_OBSERVER,
    created_epoch,
    operator_session,
)
from bench.measure import pct  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.services.agents import agent_create  # noqa: E402

FRAME_CALLS = 200
RENDER_CALLS = 50
WARMUP = 10
NEW_ROW = re.compile(r'id="req-([0-9a-f\-]{36})"')


async def frame_latency(base: str, token: str, session: str) -> list[float]:
    """Frames at a real operator socket, timed on arrival by a reader task."""
    arrivals: dict[str, float] = {}
    url = base.replace("http://", "ws://") + "/ws/approvals/?view=inbox"
    async with websockets.connect(
        url, origin=Origin(base), additional_headers={"Cookie": f"sessionid={session}"}
    ) as socket:
        await socket.recv()  # the resync on connect

        async def reader() -> None:
            async for frame in socket:
                now = time.time()
                text = frame if isinstance(frame, str) else frame.decode()
                if "beforeend:#risk-" in text:
                    for request_id in NEW_ROW.findall(text):
                        arrivals.setdefault(request_id, now)

        task = asyncio.create_task(reader())
        samples: list[float] = []
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as http:
            for i in range(WARMUP + FRAME_CALLS):
                body = {"tool": "read_file", "arguments": {"path": f"notes-{i}.txt"}}
                invocation = (await http.post("/api/v1/invocations/", json=body)).json()
                request_id = invocation["approval"]["id"]
                deadline = time.monotonic() + 10
                while request_id not in arrivals:
                    if time.monotonic() > deadline:
                        raise SystemExit(f"no frame for request {request_id}")
                    await asyncio.sleep(0.0005)
                if i >= WARMUP:
                    samples.append((arrivals[request_id] - created_epoch(invocation)) * 1000)
        task.cancel()
    return samples


def render_latency(base: str, token: str, session: str) -> list[float]:
    """Rows appearing in Chromium's DOM, timed by a MutationObserver in the page."""
    from playwright.sync_api import sync_playwright

    host = base.split("//", 1)[1].split(":", 1)[0]
    samples: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.add_cookies([{"name": "sessionid", "value": session, "domain": host, "path": "/"}])
        page = context.new_page()
        page.goto(base + "/approvals/")
        page.wait_for_selector("body[data-live=open]", timeout=15_000)
        page.evaluate(ROW_OBSERVER)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
            for i in range(WARMUP + RENDER_CALLS):
                body = {"tool": "read_file", "arguments": {"path": f"page-{i}.txt"}}
                invocation = http.post("/api/v1/invocations/", json=body).json()
                key = f"req-{invocation['approval']['id']}"
                page.wait_for_function(f"() => window.__seen['{key}']", timeout=10_000)
                seen = page.evaluate(f"() => window.__seen['{key}']") / 1000
                if i >= WARMUP:
                    samples.append((seen - created_epoch(invocation)) * 1000)
        browser.close()
    return samples


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING")
    tmp = Path(tempfile.mkdtemp(prefix="bench-approvals-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    token = agent_create(
        name=f"bench-approvals-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked"
    ).token
    session = operator_session("bench-op")
    with running(daphne, env=env, log_path=tmp / "daphne.log"):
        wait_until(lambda: http_status(base + "/healthz") in (200, 503), timeout=60, what="daphne")
        frames = asyncio.run(frame_latency(base, token, session))
        rendered = render_latency(base, token, session)
    print(json.dumps({
        "figure": "approval push: call inserted → operator's websocket frame",
        "unit": "ms", "p50": statistics.median(frames), "p95": pct(frames, 0.95),
        "note": f"{FRAME_CALLS} calls, one operator socket; goal p95 <= 50",
    }))  # fmt: skip
    print(json.dumps({
        "figure": "approval push: call inserted → row in Chromium's DOM",
        "unit": "ms", "p50": statistics.median(rendered), "p95": pct(rendered, 0.95),
        "note": f"{RENDER_CALLS} calls, htmx ws swap; goal p50 <= 200",
    }))  # fmt: skip


if __name__ == "__main__":
    main()
