"""The operators' inbox with 500 requests pending: first render, memory, a new request's push.

Starts a real daphne against the database and Redis in the environment. An agent
under the locked autonomy preset submits 500 write_file calls over REST (each waits
for a person, so nothing runs and no worker is needed). Then Chromium opens the
inbox as a signed-in operator, LOADS times over, and reports:
- the server's answer (navigation responseEnd), DOM ready (domContentLoadedEventEnd)
  and the page live (the websocket's resync applied: every pending row back after its
  frames), p50/p95, each from the start of the navigation;
- the page's size: HTML bytes, DOM nodes, JS heap in use (Chrome's Performance domain);
- with the 500 on screen, a new request's push to its row in the DOM, p50/p95 over
  PUSHES calls (the same measure as bench_approvals, under load).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

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

PENDING = int(os.environ.get("SYNTHORG_BENCH_INBOX_PENDING", "500"))
LOADS = 7
PUSHES = 20
# The resync has been applied: frames came and every pending row is back in the page.
RESYNCED = (
    "(n) => window.__lastFrame !== undefined"
    " && document.querySelectorAll(\"[id^='req-']\").length >= n"
)
# A write of a few lines, so each card carries a path, a size and a diff as people see it.
BODY = "".join(f"line {n}: the quarterly numbers, as agreed\n" for n in range(12))


def submit(http: httpx.Client, index: int) -> dict[str, Any]:
    body = {"tool": "write_file", "arguments": {"path": f"q/{index}.txt", "content": BODY}}
    answer = http.post("/api/v1/invocations/", json=body)
    if answer.status_code != 201:
        raise SystemExit(f"submission {index} answered {answer.status_code}: {answer.text}")
    invocation: dict[str, Any] = answer.json()
    return invocation


def measure(base: str, token: str, session: str) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    host = base.split("//", 1)[1].split(":", 1)[0]
    timings: dict[str, list[float]] = {"answer": [], "dom": [], "live": []}
    size: dict[str, float] = {}
    pushes: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_cookies([{"name": "sessionid", "value": session, "domain": host, "path": "/"}])
        # On connect the socket resyncs: the whole inbox again, in one frame or several.
        context.add_init_script(
            "document.addEventListener('htmx:wsAfterMessage', () => {"
            " window.__lastFrame = performance.now(); });"
        )
        for _ in range(LOADS):
            page = context.new_page()
            page.goto(base + "/approvals/")
            page.wait_for_selector("body[data-live=open]", timeout=60_000)
            page.wait_for_function(RESYNCED, arg=PENDING, timeout=120_000)
            timings["live"].append(page.evaluate("() => window.__lastFrame"))
            navigation = page.evaluate(
                "() => { const n = performance.getEntriesByType('navigation')[0];"
                " return {answer: n.responseEnd, dom: n.domContentLoadedEventEnd,"
                " bytes: n.transferSize}; }"
            )
            timings["answer"].append(navigation["answer"])
            timings["dom"].append(navigation["dom"])
            rows = page.locator("[id^='req-']").count()
            if rows < PENDING:
                raise SystemExit(f"the inbox shows {rows} requests, {PENDING} are pending")
            cdp = context.new_cdp_session(page)
            cdp.send("Performance.enable")
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            size = {
                "rows": rows,
                "html_bytes": navigation["bytes"],
                "dom_nodes": metrics["Nodes"],
                "js_heap_mb": metrics["JSHeapUsedSize"] / 2**20,
            }
            page.close()
        page = context.new_page()
        page.goto(base + "/approvals/")
        page.wait_for_selector("body[data-live=open]", timeout=60_000)
        page.wait_for_function(RESYNCED, arg=PENDING, timeout=120_000)
        page.evaluate(ROW_OBSERVER)
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            for index in range(PUSHES):
                invocation = submit(http, PENDING + index)
                key = f"req-{invocation['approval']['id']}"
                page.wait_for_function(f"() => window.__seen['{key}']", timeout=120_000)
                seen = page.evaluate(f"() => window.__seen['{key}']") / 1000
                pushes.append((seen - created_epoch(invocation)) * 1000)
        browser.close()
    return {"timings": timings, "size": size, "pushes": pushes}


def main() -> None:
    env = dict(os.environ, LOG_LEVEL="WARNING")
    tmp = Path(tempfile.mkdtemp(prefix="bench-inbox-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )  # fmt: skip
    token = agent_create(
        name=f"bench-inbox-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked"
    ).token
    session = operator_session("bench-inbox-op")
    with running(daphne, env=env, log_path=tmp / "daphne.log"):
        wait_until(lambda: http_status(base + "/healthz") in (200, 503), timeout=60, what="daphne")
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as http:
            for index in range(PENDING):
                submit(http, index)
        found = measure(base, token, session)
    note = f"{PENDING} write_file requests pending, {LOADS} loads at 1280 px"
    for key, label in (
        ("answer", "server's answer (responseEnd)"),
        ("dom", "DOM ready"),
        ("live", "live (the socket's resync applied)"),
    ):
        values = found["timings"][key]
        print(json.dumps({
            "figure": f"inbox with {PENDING} pending: {label}",
            "unit": "ms", "p50": pct(values, 0.5), "p95": pct(values, 0.95), "note": note,
        }))  # fmt: skip
    size = found["size"]
    print(json.dumps({
        "figure": f"inbox with {PENDING} pending: page size",
        "unit": "MB JS heap", "p50": round(size["js_heap_mb"], 1),
        "note": f"{size['rows']} rows, {size['html_bytes'] / 2**20:.1f} MB HTML, "
        f"{int(size['dom_nodes'])} DOM nodes",
    }))  # fmt: skip
    pushes = found["pushes"]
    print(json.dumps({
        "figure": f"inbox with {PENDING} pending: new request inserted → row in the DOM",
        "unit": "ms", "p50": pct(pushes, 0.5), "p95": pct(pushes, 0.95),
        "note": f"{PUSHES} calls while the {PENDING} are on screen",
    }))  # fmt: skip


if __name__ == "__main__":
    main()
