"""shell_command through the real namespace sandbox, and the deny-list bypasses it must stop.

Several cases are bypasses other agent runtimes shipped and later fixed: a
"shell mode" that skipped the command check, variables and command
substitution used as the executable, and aliases of a denied tool.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import (
    CountingSandbox,
    grant,
    make_context,
    namespace_backend,
)
from tools_app.builtin.base import BuiltinTool, RefusalCode, ToolOutcome, ToolRefusedError
from tools_app.builtin.terminal import tools as terminal
from tools_app.contracts import ToolRegistry
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import MountMode, NetworkPolicy

FULL = {"terminal": "full"}


@pytest.fixture
def ns() -> Iterator[CountingSandbox]:
    backend = CountingSandbox(namespace_backend())
    yield backend
    backend.close()


def run(
    ws: Path,
    sandbox: Any,
    settings: Mapping[str, Any] | None = None,
    sub: Mapping[str, Any] | None = None,
    **arguments: Any,
) -> ToolOutcome:
    context = make_context(ws, sandbox, settings=settings, **dict(FULL if sub is None else sub))
    return terminal.shell_command.run(context, arguments)


def refused(ws: Path, sandbox: Any, **kwargs: Any) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        run(ws, sandbox, **kwargs)
    return caught.value


def test_contract_registers_with_command_and_path_roles() -> None:
    tool: BuiltinTool = terminal.shell_command
    ToolRegistry().register(tool.contract)
    roles = {k: v.value for k, v in tool.contract.argument_roles.items()}
    assert roles == {"argv": "command", "command": "command", "cwd": "path"}
    assert tool.contract.category.value == "terminal"


# -- running for real ---------------------------------------------------------------


def test_runs_argv_in_the_workspace(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, argv=["cat", "hello.txt"])
    assert out.content == "hello from the workspace\n" and out.exit_code == 0
    assert not out.is_error
    spec = ns.specs[0]
    assert spec.argv == ("cat", "hello.txt")
    assert spec.network is NetworkPolicy.NONE and spec.workspace.mode is MountMode.READ_WRITE


def test_working_directory_stdin_and_exit_code(workspace: Path, ns: CountingSandbox) -> None:
    (workspace / "sub").mkdir()
    grant(workspace)
    assert run(workspace, ns, argv=["pwd"], cwd="sub").content.strip().endswith("/sub")
    assert run(workspace, ns, argv=["cat"], stdin="fed in").content == "fed in"
    failed = run(workspace, ns, argv=["ls", "no-such-file"])
    assert failed.is_error and failed.exit_code == 2 and failed.error_code == "NON_ZERO_EXIT"
    assert "[stderr]" in failed.content


def test_timeout_stops_the_command(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, argv=["sleep", "30"], timeout_seconds=0.5)
    assert out.is_error and out.error_code == "TIMED_OUT"
    assert out.structured is not None and out.structured["timed_out"] is True
    error = refused(
        workspace, ns, settings={"max_timeout_seconds": 10}, argv=["true"], timeout_seconds=11
    )
    assert error.code is RefusalCode.LIMIT_EXCEEDED


def test_output_is_cut_per_stream(workspace: Path, ns: CountingSandbox) -> None:
    out = run(
        workspace,
        ns,
        settings={"max_output_bytes": 1024},
        argv=["head", "-c", "200000", "/dev/zero"],
    )
    assert out.truncated
    assert out.structured is not None and len(out.structured["stdout"]) <= 1024


def test_environment_is_minimal(
    workspace: Path, ns: CountingSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_should_never_leak")
    monkeypatch.setenv("INNOCENT_LOOKING", "worker-only-value")
    out = run(workspace, ns, argv=["env"])
    assert "ghp_should_never_leak" not in out.content
    assert "worker-only-value" not in out.content
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in out.content


def test_cwd_outside_the_workspace_is_refused(workspace: Path, ns: CountingSandbox) -> None:
    for cwd in ("..", "/etc", "%2e%2e", "sub/../../x"):
        error = refused(workspace, ns, argv=["ls"], cwd=cwd)
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert ns.specs == []


def test_runs_on_the_subprocess_backend_too(workspace: Path) -> None:
    out = run(workspace, SubprocessSandbox(), argv=["cat", "hello.txt"])
    assert out.content == "hello from the workspace\n"


# -- allow and deny lists on the resolved executable ----------------------------------

DENY_RM = {"denied_commands": ["rm"]}


@pytest.mark.parametrize("program", ["rm", "/bin/rm", "/usr/bin/rm", "/usr/bin/../bin/rm"])
def test_a_denied_program_is_denied_by_any_path(
    workspace: Path, ns: CountingSandbox, program: str
) -> None:
    error = refused(workspace, ns, settings=DENY_RM, argv=[program, "hello.txt"])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED and "rm" in error.reason
    error = refused(workspace, ns, settings={"denied_commands": ["/bin/rm"]}, argv=[program, "x"])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    assert ns.specs == []
    assert (workspace / "hello.txt").exists()


@pytest.mark.parametrize(
    ("denied", "program"),
    [
        ("python3", "python3.11"),
        ("python3", "/usr/bin/python3.11"),
        ("python3.11", "python3"),
        ("python", "python3"),
        ("vim", "vi"),
        ("vi", "nvim"),
        ("nc", "ncat"),
        ("netcat", "nc"),
        ("sh", "bash"),
        ("bash", "dash"),
        ("sh", "/bin/sh"),
        ("awk", "mawk"),
    ],
)
def test_a_deny_on_one_alias_covers_the_family(
    workspace: Path, ns: CountingSandbox, denied: str, program: str
) -> None:
    error = refused(workspace, ns, settings={"denied_commands": [denied]}, argv=[program])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    assert ns.specs == []


def test_allow_list_admits_a_family_and_nothing_else(workspace: Path, ns: CountingSandbox) -> None:
    settings = {"allowed_commands": ["cat", "python3"]}
    assert run(workspace, ns, settings=settings, argv=["/bin/cat", "hello.txt"]).exit_code == 0
    out = run(workspace, ns, settings=settings, argv=["python3.11", "-V"])
    assert out.exit_code == 0
    error = refused(workspace, ns, settings=settings, argv=["rm", "hello.txt"])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED and "allow list" in error.reason


def test_a_symlink_named_ls_is_judged_by_what_it_points_to(
    workspace: Path, ns: CountingSandbox
) -> None:
    (workspace / "ls").symlink_to("/usr/bin/rm")
    for settings in (DENY_RM, {"allowed_commands": ["ls"]}):
        error = refused(workspace, ns, settings=settings, argv=["./ls", "hello.txt"])
        assert error.code is RefusalCode.BINARY_NOT_ALLOWED and "rm" in error.reason
    assert (workspace / "hello.txt").exists()


def test_programs_planted_in_the_workspace_are_refused(
    workspace: Path, ns: CountingSandbox
) -> None:
    script = workspace / "ls"
    script.write_text("#!/bin/sh\nrm -f hello.txt\n")
    script.chmod(0o755)
    error = refused(workspace, ns, settings={"allowed_commands": ["ls"]}, argv=["./ls"])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED and "workspace" in error.reason
    error = refused(workspace, ns, argv=[str(script)])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED


def test_restricted_terminal_uses_the_agents_allowlist(
    workspace: Path, ns: CountingSandbox
) -> None:
    sub = {"terminal": "restricted_commands", "allowed_commands": ["cat"]}
    assert run(workspace, ns, sub=sub, argv=["cat", "hello.txt"]).exit_code == 0
    assert refused(workspace, ns, sub=sub, argv=["ls"]).code is RefusalCode.BINARY_NOT_ALLOWED
    # Unset terminal access means restricted, with the level's default commands.
    assert run(workspace, ns, sub={}, argv=["ls"]).exit_code == 0
    assert refused(workspace, ns, sub={}, argv=["rm", "x"]).code is RefusalCode.BINARY_NOT_ALLOWED
    error = refused(workspace, ns, sub={"terminal": "none"}, argv=["ls"])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    # Settings and sub-constraint allowlists intersect; denials add up.
    both = refused(
        workspace,
        ns,
        settings={"allowed_commands": ["ls"]},
        sub={"terminal": "restricted_commands", "allowed_commands": ["cat"]},
        argv=["cat", "hello.txt"],
    )
    assert both.code is RefusalCode.BINARY_NOT_ALLOWED
    denied = refused(
        workspace, ns, sub={"terminal": "full", "denied_commands": ["cat"]}, argv=["cat", "x"]
    )
    assert denied.code is RefusalCode.BINARY_NOT_ALLOWED


def test_privilege_switchers_are_never_run(workspace: Path, ns: CountingSandbox) -> None:
    for argv in (["sudo", "ls"], ["su", "-c", "ls"], ["doas", "ls"], ["pkexec", "ls"]):
        assert refused(workspace, ns, argv=argv).code is RefusalCode.BINARY_NOT_ALLOWED


# -- wrappers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["env", "rm", "hello.txt"],
        ["env", "-i", "LANG=C", "rm", "hello.txt"],
        ["env", "-u", "HOME", "rm", "hello.txt"],
        ["nice", "-n", "5", "rm", "hello.txt"],
        ["nohup", "rm", "hello.txt"],
        ["timeout", "5", "rm", "hello.txt"],
        ["timeout", "-s", "KILL", "5", "/bin/rm", "hello.txt"],
        ["stdbuf", "-o0", "rm", "hello.txt"],
        ["xargs", "rm"],
        ["xargs", "-n", "1", "rm"],
        ["find", ".", "-name", "hello.txt", "-exec", "rm", "{}", ";"],
        ["find", ".", "-execdir", "/bin/rm", "{}", "+"],
        ["sh", "-c", "rm hello.txt"],
        ["bash", "-c", "ls; rm hello.txt"],
        ["bash", "-ec", "ls && (rm hello.txt)"],
        ["dash", "-c", "env rm hello.txt"],
        ["sh", "-c", "sh -c 'rm hello.txt'"],
        ["env", "sh", "-c", "xargs rm"],
        ["busybox", "rm", "hello.txt"],
        ["command", "rm", "hello.txt"],
    ],
)
def test_wrappers_have_the_wrapped_command_checked(
    workspace: Path, ns: CountingSandbox, argv: list[str]
) -> None:
    error = refused(workspace, ns, settings=DENY_RM, argv=argv, stdin="hello.txt")
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED and "rm" in error.reason
    assert ns.specs == []
    assert (workspace / "hello.txt").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["python3", "-c", "import os; os.remove('hello.txt')"],
        ["python3", "-Ic", "import os"],
        ["python3", "-W", "ignore", "-c", "import os"],
        ["perl", "-e", "unlink 'hello.txt'"],
        ["perl", "-le", "print 1"],
        ["env", "-S", "rm hello.txt"],
        ["env", "PATH=/tmp", "ls"],
        ["strace", "rm", "hello.txt"],
    ],
)
def test_wrappers_that_cannot_be_followed_are_refused(
    workspace: Path, ns: CountingSandbox, argv: list[str]
) -> None:
    assert refused(workspace, ns, argv=argv).code is RefusalCode.BINARY_NOT_ALLOWED
    assert ns.specs == []


def test_a_wrapped_allowed_command_runs(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, settings=DENY_RM, argv=["env", "-i", "cat", "hello.txt"])
    assert out.content == "hello from the workspace\n"
    out = run(workspace, ns, settings=DENY_RM, argv=["sh", "-c", "cat hello.txt | wc -l"])
    assert out.content.strip() == "1"


# -- variables and substitution as the executable -----------------------------------


@pytest.mark.parametrize("program", ["$CMD", "${CMD}", "$(echo rm)", "`echo rm`", "r*", "~/bin/x"])
def test_expansions_as_the_program_are_refused_in_argv(
    workspace: Path, ns: CountingSandbox, program: str
) -> None:
    error = refused(workspace, ns, argv=[program, "hello.txt"])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    assert ns.specs == []


@pytest.mark.parametrize(
    "inner",
    ["$CMD hello.txt", "${CMD} hello.txt", "$(echo rm) hello.txt", "`echo rm` hello.txt"],
)
def test_expansions_inside_sh_c_are_refused(
    workspace: Path, ns: CountingSandbox, inner: str
) -> None:
    error = refused(workspace, ns, argv=["sh", "-c", inner])
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    assert ns.specs == []


# -- command-line mode --------------------------------------------------------------

MODE = {"command_mode": True, "denied_commands": ["rm"]}


def test_command_lines_are_off_unless_settings_allow_them(
    workspace: Path, ns: CountingSandbox
) -> None:
    error = refused(workspace, ns, command="ls")
    assert error.code is RefusalCode.INVALID_ARGUMENT and "argv" in error.reason
    # The "shell mode skipped the check" bypass: even with the mode on, rm is denied.
    error = refused(workspace, ns, settings=MODE, command="rm hello.txt")
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED


@pytest.mark.parametrize(
    "line",
    [
        "ls | rm hello.txt",
        "ls && rm hello.txt",
        "false || rm hello.txt",
        "ls; rm hello.txt",
        "ls\nrm hello.txt",
        "(rm hello.txt)",
        "ls && (cat hello.txt; (rm hello.txt))",
        "{ ls; rm hello.txt; }",
        "! rm hello.txt",
        "'r'm hello.txt",
        "/bin/rm hello.txt",
        "env rm hello.txt",
        "echo hello.txt | xargs rm",
        "sh -c 'rm hello.txt'",
        "find . -exec rm {} +",
        "$CMD hello.txt",
        "${CMD:-rm} hello.txt",
        "$(echo rm) hello.txt",
        "`echo rm` hello.txt",
        "echo $(rm hello.txt)",
        "X=rm; $X hello.txt",
        "PATH=/tmp ls",
        "if true; then rm hello.txt; fi",
        "r* hello.txt",
    ],
)
def test_every_command_in_a_line_is_checked(
    workspace: Path, ns: CountingSandbox, line: str
) -> None:
    error = refused(workspace, ns, settings=MODE, command=line)
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED, error.reason
    assert ns.specs == []
    assert (workspace / "hello.txt").exists()


def test_an_accepted_line_runs_exactly_as_checked(workspace: Path, ns: CountingSandbox) -> None:
    (workspace / "a.txt").write_text("x\n")
    (workspace / "b.txt").write_text("y\n")
    grant(workspace)
    out = run(workspace, ns, settings=MODE, command="cat hello.txt | tr a-z A-Z && echo done")
    assert out.content == "HELLO FROM THE WORKSPACE\ndone\n"
    literal = run(workspace, ns, settings=MODE, command="echo '$HOME' \\`id\\`")
    assert literal.content == "$HOME `id`\n"
    globbed = run(workspace, ns, settings=MODE, command="ls *.txt")
    assert globbed.content.split() == ["a.txt", "b.txt", "hello.txt"]
    redirected = run(workspace, ns, settings=MODE, command="echo saved > out.txt 2>/dev/null")
    assert redirected.exit_code == 0 and (workspace / "out.txt").read_text() == "saved\n"
    assert ns.specs[0].argv[:2] == ("sh", "-c")


@pytest.mark.parametrize(
    "line",
    ["echo x > ../escape.txt", "echo x > /etc/cron.d/x", "cat < /etc/shadow", "echo > .ssh/k"],
)
def test_redirections_stay_in_the_workspace(
    workspace: Path, ns: CountingSandbox, line: str
) -> None:
    error = refused(workspace, ns, settings=MODE, command=line)
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert not (workspace.parent / "escape.txt").exists()


def test_malformed_lines_are_invalid_arguments(workspace: Path, ns: CountingSandbox) -> None:
    for line in ("echo 'open", "(ls", "ls &&"):
        assert refused(workspace, ns, settings=MODE, command=line).code is (
            RefusalCode.INVALID_ARGUMENT
        )
    error = refused(workspace, ns, settings=MODE, argv=["ls"], command="ls")
    assert error.code is RefusalCode.INVALID_ARGUMENT


def test_read_only_setting_mounts_the_workspace_read_only(
    workspace: Path, ns: CountingSandbox
) -> None:
    out = run(workspace, ns, settings={"read_only": True}, argv=["touch", "new.txt"])
    assert out.is_error and not (workspace / "new.txt").exists()
    assert os.path.exists(workspace / "hello.txt")
