"""What the inbox benchmarks share: Chromium, a signed-in operator, and timing rows.

Imported after ``django.setup()`` by the benchmark scripts.
"""

from __future__ import annotations

import os
import secrets
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

CHROMIUM = os.environ.get("SYNTHORG_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]

# Records, in the page, when each request's row first enters the DOM (directly or
# inside a swapped container), as window.__seen["req-<id>"] in epoch milliseconds.
ROW_OBSERVER = """() => {
  window.__seen = {};
  new MutationObserver((records) => {
    const now = Date.now();
    for (const r of records) for (const n of r.addedNodes) {
      if (n.nodeType !== 1) continue;
      for (const row of [n, ...n.querySelectorAll("[id^='req-']")])
        if (row.id && row.id.startsWith("req-") && !window.__seen[row.id])
          window.__seen[row.id] = now;
    }
  }).observe(document.body, {childList: true, subtree: true});
}"""


def operator_session(prefix: str) -> str:
    """A new operator's session cookie value."""
    from django.test import Client

    from trust_app.services.agents import person_create

    username = f"{prefix}-{uuid.uuid4().hex[:6]}"
    password = secrets.token_urlsafe(16)
    person_create(username=username, role="operator", password=password)
    client = Client()
    assert client.login(username=username, password=password)
    return client.cookies["sessionid"].value


def created_epoch(invocation: dict[str, Any]) -> float:
    """When the invocation's row was inserted, in epoch seconds."""
    return datetime.fromisoformat(invocation["created_at"].replace("Z", "+00:00")).timestamp()


# A write of a few lines, so each card carries a path, a size and a diff as people see it.
BODY = "".join(f"line {n}: the quarterly numbers, as agreed\n" for n in range(12))


def pending_writes(agent: Any, indices: Iterable[int], *, folder_each: bool) -> None:
    """write_file calls of ``agent`` (locked: each waits for a person), submitted through
    the pipeline in this process: each in a folder of its own (none alike), or all in one
    folder (alike: one group)."""
    from tools_app.services.invocation_submit import CallRequest, invocation_submit

    for index in indices:
        path = f"q{index}/notes.txt" if folder_each else f"q/{index}.txt"
        call = CallRequest(tool="write_file", arguments={"path": path, "content": BODY})
        invocation = invocation_submit(agent=agent, call=call).invocation
        if invocation.status != "pending_approval":
            raise SystemExit(f"call {index} is {invocation.status}: {invocation.decision}")
