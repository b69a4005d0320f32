"""The operators' inbox under a flood: 50, 500 and 1,000 pending, and a decision on 1,000.

Starts a real daphne against the database and Redis in the environment. Agents under
the locked autonomy preset ask for write_file calls (each waits for a person, so nothing
runs and no worker is needed), submitted through the pipeline in this process. Each call
writes into a folder of its own, so no two are alike: the inbox cannot group them and
must page them (its worst case). At each size (SYNTHORG_BENCH_INBOX_PENDING, default
"50,500,1000") it reports:
- the server's answer to GET /approvals/ (the first screen), p50/p95 over LOADS, and its
  HTML size;
- in Chromium at 1280 px, BROWSER_LOADS times: the server's answer (responseEnd), DOM ready
  and the page live (the socket's first answer after it said what it shows, applied),
  each from the start of the navigation; DOM nodes and JS heap in use.
Then, with the largest size on screen: a new request's push to its row in the DOM
(p50/p95 over PUSHES), and the same number of alike writes (one agent, one folder: one
group) opened as one screen; and a decision on that many in one POST of the page's form,
approve on the distinct ones, deny (with a reason) on the alike ones, each request
checked decided once.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import time
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
    pending_writes,
)
from bench.measure import pct  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from trust_app.services.agents import agent_create  # noqa: E402

SIZES = [int(n) for n in os.environ.get("SYNTHORG_BENCH_INBOX_PENDING", "50,500,1000").split(",")]
LOADS = 7
BROWSER_LOADS = 3
PUSHES = 20
CSRF = re.compile(r'"X-CSRFToken": "([^"]+)"')


def agent(prefix: str) -> Any:
    return agent_create(
        name=f"{prefix}-{uuid.uuid4().hex[:6]}", access_level="standard", autonomy="locked"
    )


def server_answers(base: str, session: str) -> tuple[list[float], int, str]:
    """Wall times of GET /approvals/ (ms), its size in bytes, and its CSRF token."""
    times: list[float] = []
    size, token = 0, ""
    with httpx.Client(base_url=base, cookies={"sessionid": session}, timeout=300) as http:
        for _ in range(LOADS):
            started = time.perf_counter()
            answer = http.get("/approvals/")
            times.append((time.perf_counter() - started) * 1000)
            if answer.status_code != 200:
                raise SystemExit(f"the inbox answered {answer.status_code}")
            size = len(answer.content)
            found = CSRF.search(answer.text)
            token = found.group(1) if found else ""
    return times, size, token


def browser_loads(context: Any, base: str) -> dict[str, Any]:
    timings: dict[str, list[float]] = {"answer": [], "dom": [], "live": []}
    size: dict[str, float] = {}
    for _ in range(BROWSER_LOADS):
        page = context.new_page()
        page.goto(base + "/approvals/", timeout=300_000)
        page.wait_for_selector("body[data-live=open]", timeout=300_000)
        page.wait_for_function("() => window.__firstFrame !== undefined", timeout=300_000)
        navigation = page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0];"
            " return {answer: n.responseEnd, dom: n.domContentLoadedEventEnd}; }"
        )
        timings["answer"].append(navigation["answer"])
        timings["dom"].append(navigation["dom"])
        timings["live"].append(page.evaluate("() => window.__firstFrame"))
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        size = {
            "rows": page.locator("[id^='req-']").count(),
            "dom_nodes": metrics["Nodes"],
            "js_heap_mb": metrics["JSHeapUsedSize"] / 2**20,
        }
        page.close()
    return {"timings": timings, "size": size}


def pushes(context: Any, base: str, token: str, pending: int) -> list[float]:
    page = context.new_page()
    page.goto(base + "/approvals/", timeout=300_000)
    page.wait_for_selector("body[data-live=open]", timeout=300_000)
    page.wait_for_function("() => window.__firstFrame !== undefined", timeout=300_000)
    page.evaluate(ROW_OBSERVER)
    found: list[float] = []
    with httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as http:
        for index in range(PUSHES):
            path = f"pushed-{pending + index}/notes.txt"
            body = {"tool": "write_file", "arguments": {"path": path, "content": "x\n"}}
            answer = http.post("/api/v1/invocations/", json=body)
            if answer.status_code != 201:
                raise SystemExit(f"a pushed call answered {answer.status_code}: {answer.text}")
            invocation = answer.json()
            key = f"req-{invocation['approval']['id']}"
            page.wait_for_function(f"() => window.__seen['{key}']", timeout=120_000)
            seen = page.evaluate(f"() => window.__seen['{key}']") / 1000
            found.append((seen - created_epoch(invocation)) * 1000)
    page.close()
    return found


def decide_all(
    base: str, session: str, csrf: str, agent_name: str, decision: str
) -> tuple[float, int, int]:
    """One POST of the page's form naming every pending request of ``agent_name``: its wall
    time (ms), how many it named, and how many of them it decided once and settled."""
    from approvals_app.models import ApprovalDecision, ApprovalRequest, ApprovalStatus

    uuids = list(
        ApprovalRequest.objects.filter(
            status=ApprovalStatus.PENDING, invocation__agent__name=agent_name
        ).values_list("id", flat=True)
    )
    ids = [str(i) for i in uuids]
    form = {"decision": decision, "reason": "bench flood", "ids": " ".join(ids)}
    cookies = {"sessionid": session, "csrftoken": csrf}
    with httpx.Client(base_url=base, cookies=cookies, timeout=600) as http:
        started = time.perf_counter()
        answer = http.post("/approvals/decide/", data=form, headers={"X-CSRFToken": csrf})
        took = (time.perf_counter() - started) * 1000
    if answer.status_code != 200:
        raise SystemExit(f"the decision answered {answer.status_code}: {answer.text[:500]}")
    decided = ApprovalDecision.objects.filter(request_id__in=uuids).count()
    settled = ApprovalRequest.objects.filter(id__in=uuids).exclude(status=ApprovalStatus.PENDING)
    return took, len(ids), min(decided, settled.count())


def row(figure: str, unit: str, values: list[float] | None = None, **extra: Any) -> None:
    found: dict[str, Any] = {"figure": figure, "unit": unit}
    if values:
        found.update(p50=pct(values, 0.5), p95=pct(values, 0.95))
    found.update(extra)
    print(json.dumps(found), flush=True)


def main() -> None:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread; the bench's own
    # database calls stay synchronous, so Django's async-safety guard does not apply.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    env = dict(os.environ, LOG_LEVEL="WARNING")
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE")
    tmp = Path(tempfile.mkdtemp(prefix="bench-inbox-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    host = "127.0.0.1"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )  # fmt: skip
    distinct, alike = agent("bench-inbox"), agent("bench-flood")
    session = operator_session("bench-inbox-op")
    made = 0
    with running(daphne, env=env, log_path=tmp / "daphne.log"), sync_playwright() as playwright:
        wait_until(lambda: http_status(base + "/healthz") in (200, 503), timeout=60, what="daphne")
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_cookies([{"name": "sessionid", "value": session, "domain": host, "path": "/"}])
        # The socket's first answer after it opened (the resync the page asked for).
        context.add_init_script(
            "document.addEventListener('htmx:wsAfterMessage', () => {"
            " if (window.__firstFrame === undefined) window.__firstFrame = performance.now(); });"
        )
        csrf = ""
        for size in SIZES:
            pending_writes(distinct.agent, range(made, size), folder_each=True)
            made = size
            times, html_bytes, csrf = server_answers(base, session)
            note = f"{size} write_file requests pending, none alike"
            row(f"inbox with {size} pending: server's answer (first screen)", "ms", times,
                note=f"{note}; {html_bytes / 1024:.0f} KB HTML, {LOADS} loads")  # fmt: skip
            found = browser_loads(context, base)
            for key, label in (
                ("answer", "server's answer (responseEnd)"),
                ("dom", "DOM ready"),
                ("live", "live (the socket's resync applied)"),
            ):
                figure = f"inbox with {size} pending in Chromium: {label}"
                loads = f"{note}, {BROWSER_LOADS} loads at 1280 px"
                row(figure, "ms", found["timings"][key], note=loads)
            shape = found["size"]
            row(f"inbox with {size} pending in Chromium: page size", "MB JS heap",
                p50=round(shape["js_heap_mb"], 1),
                note=f"{shape['rows']} rows on screen, {html_bytes / 1024:.0f} KB HTML, "
                f"{int(shape['dom_nodes'])} DOM nodes")  # fmt: skip
        largest = SIZES[-1]
        pushed = pushes(context, base, distinct.token, largest)
        row(f"inbox with {largest} pending: new request inserted → row in the DOM", "ms", pushed,
            note=f"{PUSHES} calls while the {largest} are pending")  # fmt: skip
        pending_writes(alike.agent, range(largest), folder_each=False)
        times, html_bytes, csrf = server_answers(base, session)
        figure = f"inbox with {largest} alike + {largest + PUSHES} others pending: server's answer"
        grouped = f"the {largest} alike are one group; {html_bytes / 1024:.0f} KB HTML"
        row(figure, "ms", times, note=grouped)
        browser.close()
        for who, decision in ((distinct.agent.name, "approve"), (alike.agent.name, "deny")):
            took, count, decided = decide_all(base, session, csrf, who, decision)
            row(f"{decision} {count} pending in one decision (the page's form)", "ms",
                p50=round(took), note=f"{decided} of {count} decided once and settled; "
                "each decided and audited on its own; one POST, ids only")  # fmt: skip


if __name__ == "__main__":
    main()
