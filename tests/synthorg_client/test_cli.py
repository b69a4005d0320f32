"""The command line: output, exit codes, configuration from flags and environment."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthorg_client.cli import main

from tests.synthorg_client.console import TOKEN, FakeConsole


def run(console: FakeConsole, *argv: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["--url", console.url, "--token", TOKEN, *argv],
        stdout=out,
        stderr=err,
        stdin=io.StringIO(stdin),
    )
    return code, out.getvalue(), err.getvalue()


def test_call_prints_the_invocation_and_exits_zero(console: FakeConsole) -> None:
    code, out, _ = run(console, "call", "read_file", '{"path": "notes.txt"}')
    assert code == 0
    invocation = json.loads(out)
    assert invocation["status"] == "succeeded"
    assert invocation["result"]["content"] == "contents of notes.txt"
    assert console.invocation_requests()[-1].body["wait"] == 60


def test_call_sends_idempotency_key(console: FakeConsole) -> None:
    run(console, "call", "read_file", "{}", "--idempotency-key", "cli-1", "--wait", "0")
    assert console.invocation_requests()[-1].body == {
        "tool": "read_file",
        "arguments": {},
        "idempotency_key": "cli-1",
    }


def test_call_without_a_key_sends_a_fresh_one_and_reuses_it_on_a_retry(
    console: FakeConsole,
) -> None:
    run(console, "call", "read_file", "{}", "--wait", "0")
    console.lose_answers = 1
    code, out, _ = run(console, "call", "read_file", "{}", "--wait", "0")
    assert code == 0 and json.loads(out)["status"] == "succeeded"
    keys = [r.body["idempotency_key"] for r in console.invocation_requests()]
    assert len(keys) == 3
    assert keys[0] != keys[1], "each command is its own logical call"
    assert keys[1] == keys[2], "the retry after the lost answer reuses the key"
    assert len(console.invocations) == 2


def test_arguments_from_stdin(console: FakeConsole) -> None:
    code, out, _ = run(console, "call", "read_file", "-", stdin='{"path": "in.txt"}')
    assert code == 0 and json.loads(out)["result"]["content"] == "contents of in.txt"


@pytest.mark.parametrize(("tool", "status"), [("delete_all", "denied"), ("broken", "failed")])
def test_invocation_that_did_not_succeed_exits_one(
    console: FakeConsole, tool: str, status: str
) -> None:
    code, out, _ = run(console, "call", tool, "{}")
    assert (code, json.loads(out)["status"]) == (1, status)


def test_unfinished_invocation_exits_three(console: FakeConsole) -> None:
    code, out, _ = run(console, "call", "needs_approval", "{}", "--wait", "0")
    assert (code, json.loads(out)["status"]) == (3, "pending_approval")


def test_error_answer_exits_four_with_the_envelope_on_stderr(console: FakeConsole) -> None:
    code, out, err = run(console, "call", "error:forbidden", "{}")
    assert (code, out) == (4, "")
    assert json.loads(err)["error"]["code"] == "forbidden"


@pytest.mark.parametrize("arguments", ["not json", "[1, 2]"])
def test_bad_arguments_exit_two_without_a_request(console: FakeConsole, arguments: str) -> None:
    code, _, err = run(console, "call", "read_file", arguments)
    assert code == 2 and "arguments" in err
    assert console.invocation_requests() == []


def test_missing_url_or_token_exits_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SYNTHORG_URL", raising=False)
    monkeypatch.delenv("SYNTHORG_TOKEN", raising=False)
    err = io.StringIO()
    assert main(["tools"], stdout=io.StringIO(), stderr=err) == 2
    assert "SYNTHORG_URL" in err.getvalue()


def test_tools_tool_get_cancel(console: FakeConsole) -> None:
    code, out, _ = run(console, "tools")
    assert code == 0 and json.loads(out)["tools"][0]["name"] == "read_file"
    code, out, _ = run(console, "tool", "read_file")
    assert code == 0 and json.loads(out)["definition_hash"] == "f" * 64
    _, out, _ = run(console, "call", "never", "{}", "--wait", "0")
    invocation_id = json.loads(out)["id"]
    code, out, _ = run(console, "get", invocation_id)
    assert (code, json.loads(out)["status"]) == (3, "queued")
    code, out, _ = run(console, "cancel", invocation_id)
    assert (code, json.loads(out)["status"]) == (0, "cancelled")
    code, out, _ = run(console, "get", invocation_id)
    assert (code, json.loads(out)["status"]) == (1, "cancelled")


def test_connection_options_after_the_command(console: FakeConsole) -> None:
    out = io.StringIO()
    code = main(["me", "--url", console.url, "--token", TOKEN], stdout=out, stderr=io.StringIO())
    assert code == 0 and json.loads(out.getvalue())["name"] == "test-agent"


def _module(console: FakeConsole, source: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(SYNTHORG_URL=console.url, SYNTHORG_TOKEN=TOKEN)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "synthorg_client", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_python_dash_m_with_environment(console: FakeConsole, client_source: Path) -> None:
    done = _module(console, client_source, "call", "read_file", '{"path": "notes.txt"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["content"] == "contents of notes.txt"
    denied = _module(console, client_source, "call", "delete_all", "{}")
    assert denied.returncode == 1
    refused = _module(console, client_source, "call", "error:unauthenticated", "{}")
    assert refused.returncode == 4
    assert json.loads(refused.stderr)["error"]["code"] == "unauthenticated"
