"""The desktop tools' argument rules, each refusal beside an accepted control."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from common.config.desktop import DEFAULT_PROGRAMS
from tools_app.builtin.base import RefusalCode, ToolRefusedError
from tools_app.builtin.desktop.arguments import (
    checked_env,
    checked_keys,
    checked_point,
    checked_program,
    checked_text,
)


def _code(call: Callable[[], object]) -> RefusalCode:
    with pytest.raises(ToolRefusedError) as refused:
        call()
    return refused.value.code


def test_only_allowed_programs_run_as_the_file_that_was_judged() -> None:
    argv = checked_program(["xterm", "-e", "true"], DEFAULT_PROGRAMS, {})
    assert argv[0].startswith("/usr/") and argv[0].endswith("/xterm") and argv[1:] == ["-e", "true"]
    for refused in (["bash"], ["/bin/sh", "-c", "xterm"], ["env", "xterm"], ["/workspace/xterm"]):
        with pytest.raises(ToolRefusedError) as caught:
            checked_program(refused, DEFAULT_PROGRAMS, {})
        assert caught.value.code is RefusalCode.BINARY_NOT_ALLOWED, refused


def test_an_agents_own_rules_narrow_the_programs() -> None:
    assert checked_program(["xmessage", "hi"], DEFAULT_PROGRAMS, {"terminal": "none"})
    no_shell = {"terminal": "none"}
    assert _code(lambda: checked_program(["xterm"], DEFAULT_PROGRAMS, no_shell)) is (
        RefusalCode.BINARY_NOT_ALLOWED
    )
    denied = {"denied_commands": ["xmessage"]}
    assert _code(lambda: checked_program(["xmessage"], DEFAULT_PROGRAMS, denied)) is (
        RefusalCode.BINARY_NOT_ALLOWED
    )


def test_keys_follow_the_grammar() -> None:
    assert checked_keys("ctrl+s") == ["ctrl+s"]
    assert checked_keys("Control+Shift+t enter f5 a") == ["ctrl+shift+t", "Return", "F5", "a"]
    for keys in ("ctrl+", "hyper+s", "ctrl+ctrl+s", "Return;rm", "sysrq", "ctrl+s " * 17, ""):
        with pytest.raises(ToolRefusedError) as caught:
            checked_keys(keys)
        assert caught.value.code is RefusalCode.INVALID_ARGUMENT, keys


def test_text_points_and_variables_are_bounded() -> None:
    assert checked_text("echo hi\n\tok", 100) == "echo hi\n\tok"
    assert _code(lambda: checked_text("a\x1b[2J", 100)) is RefusalCode.INVALID_ARGUMENT
    assert _code(lambda: checked_text("a" * 101, 100)) is RefusalCode.LIMIT_EXCEEDED
    assert checked_point(0, 767, 1024, 768) == (0, 767)
    for x, y in ((1024, 0), (-1, 0), (0, 768), (True, 0), (1.5, 0)):
        with pytest.raises(ToolRefusedError):
            checked_point(x, y, 1024, 768)
    assert checked_env({"LABEL": "one"}) == {"LABEL": "one"}
    for name in ("LD_PRELOAD", "DISPLAY", "PATH", "GITHUB_TOKEN", "bad name"):
        with pytest.raises(ToolRefusedError):
            checked_env({name: "x"})
