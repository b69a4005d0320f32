"""The official TypeScript MCP SDK, as published on npm, against the make-run console.

`npm ci` installs the SDK from the committed package-lock.json into
tests/acceptance/mcp_ts/ (node and npm come with `make test`'s setup); a small script
of the SDK's stock calls runs while a person decides through the operators' REST
endpoint.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.conftest import Console
from tests.acceptance.console import decide
from tests.acceptance.mcp_calls import approval_of, late_approval, read_back, text_of

CLIENT_DIR = Path(__file__).parent / "mcp_ts"
SDK_PACKAGE = CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
# Long enough for the client to receive progress notes (one at once, then one every
# 5 s); short of the SDK's own 60 s request timeout.
PERSON_DELAY_SECONDS = 12
SCRIPT_TIMEOUT_SECONDS = 240


def _locked_version() -> str:
    lock = json.loads((CLIENT_DIR / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/@modelcontextprotocol/sdk"]["version"])


@pytest.fixture(scope="session")
def typescript_client() -> Path:
    """The script's directory with the locked SDK installed (`npm ci` when it is not)."""
    for program in ("node", "npm"):
        assert shutil.which(program), f"{program} is missing: scripts/require.sh test installs it"
    installed = json.loads(SDK_PACKAGE.read_text())["version"] if SDK_PACKAGE.exists() else None
    if installed != _locked_version():
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=CLIENT_DIR,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return CLIENT_DIR / "client.mjs"


def test_the_typescript_sdk_calls_waits_sees_a_denial_and_cancels(
    console: Console, operator: httpx.Client, typescript_client: Path
) -> None:
    token = console.credentials.agents["ops-bot"]
    tag = uuid.uuid4().hex[:8]
    approved, denied, cancelled = (f"ts-{kind}-{tag}.txt" for kind in ("ok", "no", "stop"))
    reason = f"not from typescript today {tag}"
    decided: dict[str, dict[str, Any]] = {}

    def person() -> None:
        decided["approved"] = approval_of(operator, "write_file", approved)
        time.sleep(PERSON_DELAY_SECONDS)  # a person reading the request; not a measurement
        decide(operator, decided["approved"]["id"], "approve")
        decided["denied"] = approval_of(operator, "write_file", denied)
        decide(operator, decided["denied"]["id"], "deny", reason)

    operator_thread = threading.Thread(target=person, name="operator")
    operator_thread.start()
    try:
        run = subprocess.run(
            ["node", str(typescript_client), console.base_url + "/mcp/", token,
             approved, denied, cancelled],
            cwd=CLIENT_DIR, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_SECONDS,
            check=False,
        )  # fmt: skip
    finally:
        operator_thread.join(timeout=120)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])

    assert report["writeFileAnnotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }

    ok = report["approved"]
    assert ok["isError"] is False, ok
    assert ok["meta"]["synthorg/status"] == "succeeded"
    request_id = decided["approved"]["id"]
    # While the call waits, each note names the approval request; a note that falls just
    # after the person's decision says where the call stands then.
    notes = [note["message"] for note in ok["progress"]]
    waiting = [message for message in notes if "awaits a person's approval" in message]
    assert len(waiting) >= 2, notes
    assert all(f"approval request {request_id}" in message for message in waiting), notes
    after = [message for message in notes if message not in waiting]
    assert all(message.endswith((" is queued", " is running")) for message in after), notes
    assert "from typescript" in text_of(read_back(console, "ops-bot", approved))

    no = report["denied"]
    assert no["isError"] is True and no["meta"]["synthorg/status"] == "denied"
    assert reason in no["text"], no

    stop = report["cancelled"]
    assert "error" in stop and stop["progress"], stop  # the SDK rejects the aborted call
    row = approval_of(operator, "write_file", cancelled, status="cancelled")
    assert row["invocation"]["status"] == "cancelled"
    assert late_approval(operator, row["id"]).status_code == 409
    assert read_back(console, "ops-bot", cancelled).is_error is True, "it never ran"
