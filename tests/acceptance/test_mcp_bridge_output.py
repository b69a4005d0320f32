"""What an upstream MCP server returns reaches agents clean, its structure kept.

A console started as `make run` starts it bridges a Python server written with the
official SDK (tests/acceptance/upstream_escapes.py, started by the worker inside the
namespace sandbox) whose JSON text and ``structuredContent`` carry terminal escapes
(a colour, a window title, a screen clear) and a zero-width space. Agents call it over
REST and with the stock MCP client; the controls are a JSON text with no escapes and
plain text, which come back as they were.
"""

from __future__ import annotations

import json
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from common.testing import wait_until
from tests.acceptance.conftest import Console, _private_dir
from tests.acceptance.console import (
    TRACEBACK,
    Credentials,
    copy_var,
    start_launcher,
    stop_launcher,
)
from tests.acceptance.mcp_calls import rest_call, text_of, tools_listed
from tests.tools_app.mcp.conftest import with_mcp

HERE = Path(__file__).resolve().parent
SERVER = HERE / "upstream_escapes.py"
# The suite's own site-packages: the server imports the SDK from there.
SITE = sysconfig.get_paths()["purelib"]
AGENT = "build-bot"
# What a terminal or a renderer would act on; none of it may reach an agent, raw or
# JSON-escaped.
HIDDEN = ("\x1b", "\x07", "\u200b", "\\u001b", "\\u0007", "\\u200b", "\\u001B", "\\u200B")
CLEANED = {
    "status": "ok-word",
    "title": "visible",
    "screen": "after clear",
    "nested": {"items": ["ab", 7, True, None], "key": 1.5},
}
TAME = {"status": "ok-word", "count": 3, "tags": ["é", "b"], "ok": True, "none": None}


def _config() -> str:
    return f"""
sandboxing:
  namespace:
    extra_ro_binds: ["{SITE}", "{HERE}"]
mcp_servers:
  - name: esc
    transport: stdio
    command: [/usr/bin/python3, "{SERVER}", "{SITE}"]
    tools:
      safety_classes: {{"*": read}}
      action_types: {{"*": "code:read"}}
"""


@pytest.fixture(scope="module")
def escapes_console(prepared_var: Path, acceptance_root: Path) -> Iterator[Console]:
    """A console whose config names the escaping upstream server."""
    root = _private_dir(acceptance_root, "bridge-output.")
    config = root / "synthorg.yaml"
    config.write_text(_config())
    copy_var(prepared_var, root / "var")
    launcher = start_launcher(
        root / "var", root / "launcher.log", extra_env={"SYNTHORG_CONFIG": str(config)}
    )
    try:
        launcher.wait_healthy()
        console = Console(
            launcher=launcher, credentials=Credentials.read(root / "var" / "demo-credentials.txt")
        )
        wait_until(
            lambda: {"esc__report", "esc__clean_report", "esc__plain"} <= tools_listed(console),
            timeout=120,
            what="the upstream tools to be discovered",
            poll=0.5,
        )
        yield console
        code = stop_launcher(launcher)
        assert code == 0, launcher.output()[-6000:]
        assert TRACEBACK not in launcher.own_output(), launcher.output()[-6000:]
    finally:
        launcher.kill_everything()


def _hidden_in(text: str) -> list[str]:
    return [h for h in HIDDEN if h in text]


def _mcp_call(console: Console, tool: str) -> Any:
    async def work(session: Any) -> Any:
        return await session.call_tool(tool, {"word": "ok-word"})

    return with_mcp(console.base_url, console.credentials.agents[AGENT], work)


def test_rest_json_text_with_escapes_comes_back_clean_with_its_structure(
    escapes_console: Console,
) -> None:
    done = rest_call(escapes_console, AGENT, "esc__report", {"word": "ok-word"})
    assert done["status"] == "succeeded", done
    content = done["result"]["content"]
    assert not _hidden_in(content), content
    assert json.loads(content) == CLEANED, "still JSON, its strings cleaned"
    structured = done["result"]["structured"]
    assert structured == CLEANED, "structuredContent survives, sanitised"
    assert not _hidden_in(json.dumps(done, ensure_ascii=False)), done


def test_mcp_json_text_with_escapes_comes_back_clean_with_its_structure(
    escapes_console: Console,
) -> None:
    result = _mcp_call(escapes_console, "esc__report")
    assert result.is_error is False, text_of(result)
    text = result.content[0].text
    assert not _hidden_in(text), text
    assert json.loads(text) == CLEANED
    assert result.structured_content == CLEANED
    wire = result.model_dump_json(by_alias=True)
    assert not _hidden_in(wire), wire


def test_control_json_text_without_escapes_and_plain_text_are_unchanged(
    escapes_console: Console,
) -> None:
    tame = rest_call(escapes_console, AGENT, "esc__clean_report", {"word": "ok-word"})
    assert tame["status"] == "succeeded", tame
    assert tame["result"]["content"] == json.dumps(TAME, indent=2), "kept as the server wrote it"
    assert tame["result"]["structured"] == TAME
    over_mcp = _mcp_call(escapes_console, "esc__clean_report")
    assert json.loads(over_mcp.content[0].text) == TAME
    assert over_mcp.structured_content == TAME
    plain = rest_call(escapes_console, AGENT, "esc__plain", {"word": "ok-word"})
    assert plain["status"] == "succeeded", plain
    assert plain["result"]["content"] == "plain words: ok-word {not json}"
    assert plain["result"]["structured"] == {"result": "plain words: ok-word {not json}"}
    plain_mcp = _mcp_call(escapes_console, "esc__plain")
    assert plain_mcp.content[0].text == "plain words: ok-word {not json}"
    assert plain_mcp.structured_content == {"result": "plain words: ok-word {not json}"}
