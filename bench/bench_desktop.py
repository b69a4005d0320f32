"""The desktop and the browser's picture tools end to end, as an agent meets them.

Starts the console as `make run` does (``python -m synthorg_site.launcher``) on the
demo's config (browser and desktop on) and drives it through REST only:
- a desktop session's start: ``desktop_launch`` of xterm by an agent without a session
  (Xvfb, the session's sandbox, the program and its first window), one agent per run;
- click to screenshot: ``desktop_click`` then ``desktop_screenshot`` in a warm session,
  the pair timed as an agent waits for both;
- ``desktop_screenshot`` alone in the warm session;
- ``browser_diff`` of a workspace page against a baseline screenshot (a fresh Chromium,
  SSIM and the diff picture), and ``browser_screenshot`` of the same page.
Bounded: a fixed number of runs per figure.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.bench_engine import _agent as engine_agent  # noqa: E402
from bench.bench_engine import _call as engine_call  # noqa: E402
from bench.bench_engine import _client as engine_client  # noqa: E402
from bench.measure import emit_row, p50_p95_row  # noqa: E402
from common.testing import BASE_DIR, free_port, http_status, python_argv, running, wait_until  # noqa: E402

SESSION_STARTS = 5
PAIRS = 20
SHOTS = 20
DIFFS = 10
PAGE = "<!doctype html><html lang='en'><title>Bench</title><main><h1>Heading</h1></main></html>"


def _agent() -> str:
    token, workspace = engine_agent("bench-desktop")
    (workspace / "page.html").write_text(PAGE)
    return token


def _succeeded(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = engine_call(http, tool, arguments)
    if answer.get("status") != "succeeded":
        raise SystemExit(f"{tool} did not succeed: {answer}")
    return answer


def _timed(http: httpx.Client, *calls: tuple[str, dict[str, Any]]) -> float:
    started = time.perf_counter()
    for tool, arguments in calls:
        _succeeded(http, tool, arguments)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    env = dict(
        os.environ,
        LOG_LEVEL="WARNING",
        SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000",
        PORT=str(free_port()),
        HOST="127.0.0.1",
        SYNTHORG_CONFIG=str(BASE_DIR / "deploy" / "demo" / "synthorg.yaml"),
    )
    tmp = Path(tempfile.mkdtemp(prefix="bench-desktop-"))
    base = f"http://127.0.0.1:{env['PORT']}"
    launcher = python_argv("-m", "synthorg_site.launcher")
    try:
        with running(launcher, env=env, log_path=tmp / "console.log"):
            wait_until(
                lambda: http_status(base + "/healthz") == 200, timeout=240, what="the console"
            )
            starts: list[float] = []
            token = ""
            for _ in range(SESSION_STARTS):
                token = _agent()
                with engine_client(base, token) as http:
                    starts.append(_timed(http, ("desktop_launch", {"argv": ["xterm"]})))
            emit_row(
                p50_p95_row(
                    "desktop session start (desktop_launch xterm, end to end)",
                    starts,
                    f"{len(starts)} agents, one new session each, namespace sandbox",
                )
            )
            with engine_client(base, token) as http:
                pairs = [
                    _timed(
                        http,
                        ("desktop_click", {"x": 100 + i, "y": 100}),
                        ("desktop_screenshot", {}),
                    )
                    for i in range(PAIRS)
                ]
                emit_row(
                    p50_p95_row(
                        "desktop click to screenshot (two calls, warm session)",
                        pairs,
                        f"{len(pairs)} pairs, REST, each call waited for",
                    )
                )
                shots = [_timed(http, ("desktop_screenshot", {})) for _ in range(SHOTS)]
                emit_row(
                    p50_p95_row(
                        "desktop_screenshot (warm session)", shots, f"{len(shots)} calls, REST"
                    )
                )
                page = {"url": "file:///workspace/page.html"}
                baseline = _succeeded(http, "browser_screenshot", page)["result"]["structured"][
                    "path"
                ]
                browser_shots = [_timed(http, ("browser_screenshot", page)) for _ in range(DIFFS)]
                emit_row(
                    p50_p95_row(
                        "browser_screenshot end to end (workspace page)",
                        browser_shots,
                        f"{len(browser_shots)} calls, a fresh Chromium each, REST",
                    )
                )
                diffs = [
                    _timed(http, ("browser_diff", {**page, "baseline": baseline}))
                    for _ in range(DIFFS)
                ]
                emit_row(
                    p50_p95_row(
                        "browser_diff end to end (screenshot, SSIM, diff picture)",
                        diffs,
                        f"{len(diffs)} calls, REST; median {statistics.median(diffs):.0f} ms",
                    )
                )
    except SystemExit as stopped:
        print(json.dumps({"figure": "desktop", "error": str(stopped)}), flush=True)


if __name__ == "__main__":
    main()
