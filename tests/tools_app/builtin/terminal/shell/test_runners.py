"""shell_command: programs on the allow list must not start programs that are not.

git (allowed under restricted terminal access) and everyday tools that can run
others through their options, each attack beside the same program doing its
allowed job through the real namespace sandbox.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import (
    CountingSandbox,
    grant,
    make_context,
    namespace_backend,
)
from tests.tools_app.builtin.git_fixtures import git, make_repo
from tools_app.builtin.base import RefusalCode, ToolOutcome, ToolRefusedError
from tools_app.builtin.terminal import tools as terminal
from tools_app.sandbox.protocol import MountMode, SandboxSpec, WorkspaceMount

RESTRICTED = {"terminal": "restricted_commands"}  # the level's defaults: ls, cat, …, git
FULL = {"terminal": "full"}
COMMAND_MODE = {"command_mode": True}
FILTER_OUTPUT = "FILTER-RAN"


@pytest.fixture
def ns() -> Iterator[CountingSandbox]:
    backend = CountingSandbox(namespace_backend())
    yield backend
    backend.close()


@pytest.fixture
def repo(workspace: Path) -> Path:
    path = make_repo(workspace / "proj")
    grant(workspace)
    return path


def run(
    ws: Path,
    sandbox: Any,
    sub: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    **arguments: Any,
) -> ToolOutcome:
    context = make_context(ws, sandbox, settings=settings, **(sub or RESTRICTED))
    return terminal.shell_command.run(context, arguments)


def refused(ws: Path, sandbox: Any, **kwargs: Any) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        run(ws, sandbox, **kwargs)
    return caught.value


# --- git: the positive controls -------------------------------------------------------


def test_plain_git_works_through_shell_command(
    workspace: Path, repo: Path, ns: CountingSandbox
) -> None:
    status = run(workspace, ns, argv=["git", "status", "--short", "--branch"], cwd="proj")
    assert status.exit_code == 0 and "## main" in status.content
    log = run(workspace, ns, argv=["git", "-C", "proj", "log", "--format=%s"])
    assert log.content.splitlines() == ["second commit", "first commit"]
    (repo / "new.txt").write_text("new\n")
    grant(workspace)
    run(workspace, ns, argv=["git", "add", "new.txt"], cwd="proj")
    commit = run(
        workspace,
        ns,
        argv=["git", "commit", "-q", "-m", "from the shell"],
        cwd="proj",
    )
    assert commit.exit_code == 0, commit.content
    assert git(repo, "log", "-1", "--format=%s").strip() == "from the shell"
    line = run(
        workspace,
        ns,
        settings=COMMAND_MODE,
        command="git log --format=%s | head -n 1",
        cwd="proj",
    )
    assert line.content.strip() == "from the shell"
    grep = run(workspace, ns, argv=["git", "grep", "-c", "std::vector"], cwd="proj")
    assert grep.exit_code == 1  # searched, found nothing


# --- git: options that would run a program ---------------------------------------------


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["git", "-c", "alias.x=!touch pwned", "x"], "-c"),
        (["git", "-c", "core.pager=touch pwned", "log"], "-c"),
        (["git", "-c", "core.sshCommand=touch pwned", "status"], "-c"),
        (["git", "-c", "core.fsmonitor=touch pwned", "status"], "-c"),
        (["git", "-c", "core.editor=touch pwned", "commit"], "-c"),
        (["git", "--config-env=core.pager=HOME", "log"], "--config-env"),
        (["git", "--exec-path=/workspace", "status"], "--exec-path"),
        (["git", "--git-dir=/tmp/other/.git", "log"], "--git-dir"),
        (["git", "clone", "-u", "touch pwned", ".", "copy"], "clone"),
        (["git", "clone", "ext::sh -c touch% pwned", "copy"], "clone"),
        (["git", "ls-remote", "--upload-pack=touch pwned", "."], "ls-remote"),
        (["git", "fetch", "origin"], "fetch"),
        (["git", "push", "--receive-pack=touch pwned", "origin"], "push"),
        (["git", "grep", "-O", "touch", "hello"], "-O"),
        (["git", "grep", "-inOtouch", "hello"], "-inOtouch"),
        (["git", "grep", "--open-files-in-pager=touch", "hello"], "--open-files-in-pager"),
        (["git", "grep", "--open=touch", "hello"], "--open=touch"),
        (["git", "rebase", "--exec", "touch pwned", "HEAD~1"], "--exec"),
        (["git", "rebase", "-x", "touch pwned", "HEAD~1"], "-x"),
        (["git", "archive", "--remote=ext::x", "HEAD"], "--remote"),
        (["git", "diff", "--ext-diff"], "--ext-diff"),
        (["git", "st"], "st"),
        (["git", "difftool"], "difftool"),
        (["git", "help", "log"], "help"),
        (["git", "log", "--help"], "--help"),
        (["git", "bisect", "run", "touch", "pwned"], "run"),
        (["git", "config", "core.pager", "touch pwned"], "config"),
        (["git", "submodule", "update"], "submodule"),
        (["xargs", "git", "status"], "git runs only as a command of its own"),
        (["find", ".", "-exec", "git", "status", ";"], "git runs only as a command of its own"),
        (["env", "GIT_CONFIG_PARAMETERS='core.pager=touch'", "git", "log"], "GIT_CONFIG_"),
    ],
)
def test_git_options_that_run_programs_are_refused(
    workspace: Path, repo: Path, ns: CountingSandbox, argv: list[str], named: str
) -> None:
    error = refused(workspace, ns, sub=FULL, argv=argv, cwd="proj")
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    assert named in error.reason
    assert ns.specs == []
    assert not (repo / "pwned").exists()


def test_git_under_sh_c_is_refused_but_runs_in_a_command_line(
    workspace: Path, repo: Path, ns: CountingSandbox
) -> None:
    error = refused(workspace, ns, sub=FULL, argv=["sh", "-c", "git status"], cwd="proj")
    assert "git runs only as a command of its own" in error.reason
    out = run(workspace, ns, sub=FULL, settings=COMMAND_MODE, command="(git status)", cwd="proj")
    assert "On branch main" in out.content


def _unprotected_git(ns: CountingSandbox, workspace: Path, *args: str) -> str:
    """Git started in the same sandbox without the launcher: what shell_command used to do."""
    result = ns.inner.run(
        SandboxSpec(
            argv=("git", "-c", "safe.directory=*", *args),
            workspace=WorkspaceMount(workspace, MountMode.READ_ONLY),
            cwd="proj",
            timeout_seconds=30,
        )
    )
    return result.stdout + result.stderr


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (f'[filter "x"]\n\tclean = echo {FILTER_OUTPUT}\n', "filter.x.clean"),
        (f'[diff "x"]\n\tcommand = echo {FILTER_OUTPUT}\n', "diff.x.command"),
        (f"[diff]\n\texternal = echo {FILTER_OUTPUT}\n", "diff.external"),
    ],
)
def test_repository_config_cannot_make_shell_git_run_a_program(
    workspace: Path, repo: Path, ns: CountingSandbox, config: str, key: str
) -> None:
    (repo / ".gitattributes").write_text("* filter=x diff=x\n")
    (repo / "README.md").write_text("changed\n")
    grant(workspace)
    # Control: the same command through shell_command works before the config changes.
    assert "+changed" in run(workspace, ns, argv=["git", "diff"], cwd="proj").content
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(config)
    # Control: git without the console's launcher runs the program.
    assert FILTER_OUTPUT in _unprotected_git(ns, workspace, "diff")
    error = refused(workspace, ns, argv=["git", "diff"], cwd="proj")
    assert f"'{key}'" in error.reason


@pytest.mark.parametrize(
    "argv",
    [
        ["git", "--no-pager", "-C", "proj", "diff"],
        ["git", "-P", "-C", "proj", "--literal-pathspecs", "diff"],
        ["git", "-C", "proj/..", "-C", "proj", "diff"],
    ],
)
def test_every_dash_c_directory_is_checked_before_git_runs(
    workspace: Path, repo: Path, ns: CountingSandbox, argv: list[str]
) -> None:
    """-C after other global options still leads to the checked repository."""
    (repo / ".gitattributes").write_text("* filter=x\n")
    (repo / "README.md").write_text("changed\n")
    grant(workspace)
    assert "+changed" in run(workspace, ns, argv=argv).content  # control
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(f'[filter "x"]\n\tclean = echo {FILTER_OUTPUT}\n')
    error = refused(workspace, ns, argv=argv)
    assert "'filter.x.clean'" in error.reason


def test_a_new_repository_can_be_made_and_used(workspace: Path, ns: CountingSandbox) -> None:
    assert run(workspace, ns, argv=["git", "init", "-q", "-b", "main", "fresh"]).exit_code == 0
    (workspace / "fresh" / "a.txt").write_text("a\n")
    grant(workspace)
    run(workspace, ns, argv=["git", "-C", "fresh", "add", "a.txt"])
    commit = run(workspace, ns, argv=["git", "-C", "fresh", "commit", "-q", "-m", "first"])
    assert commit.exit_code == 0, commit.content
    log = run(workspace, ns, argv=["git", "-C", "fresh", "log", "--format=%an: %s"])
    assert log.content == "tester: first\n"  # the agent's name when the repository has none


def test_links_under_git_are_refused_in_shell_git(
    workspace: Path, repo: Path, ns: CountingSandbox, tmp_path: Path
) -> None:
    other = make_repo(tmp_path / "other")
    (repo / ".git" / "refs" / "heads" / "main").unlink()
    (repo / ".git" / "refs" / "heads" / "main").symlink_to(other / ".git" / "refs/heads/main")
    error = refused(workspace, ns, argv=["git", "log"], cwd="proj")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert ".git/refs/heads/main is a symbolic link" in error.reason


# --- other programs that can start programs ---------------------------------------------


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["tar", "-xf", "a.tar", "--to-command=sh"], "--to-command"),
        (["tar", "-xf", "a.tar", "--to-com=sh"], "--to-com"),
        (["tar", "-cf", "a.tar", "--use-compress-program=sh", "hello.txt"], "--use-compress"),
        (["tar", "-c", "-I", "sh", "-f", "a.tar", "hello.txt"], "-I"),
        (["tar", "cIf", "sh", "a.tar", "hello.txt"], "cIf"),
        (
            ["tar", "-cf", "a.tar", "--checkpoint=1", "--checkpoint-action=exec=sh"],
            "--checkpoint-a",
        ),
        (["tar", "-cf", "a.tar", "-F", "sh", "hello.txt"], "-F"),
        (["awk", 'BEGIN { system("id") }'], "system"),
        (["awk", 'BEGIN { print "id" | "sh" }'], "|"),
        (["awk", 'BEGIN { "id" | getline x }'], "|"),
        (["awk", "-f", "prog.awk", "hello.txt"], "-f"),
        (["gawk", "--exec=prog.awk"], "--exec"),
        (["rsync", "-e", "sh -c id", "a", "b:c"], "-e"),
        (["rsync", "-avze", "sh", "a", "b:c"], "-avze"),
        (["rsync", "--rsh=sh", "a", "b:c"], "--rsh"),
        (["ssh", "-o", "ProxyCommand=sh -c id", "localhost"], "proxycommand"),
        (["ssh", "-oLocalCommand=id", "-oPermitLocalCommand=yes", "localhost"], "localcommand"),
        (["ssh", "-F", "my_config", "localhost"], "-F"),
        (["scp", "-S", "sh", "a", "b:c"], "-S"),
        (["man", "-P", "sh -c id", "ls"], "-P"),
        (["man", "--pager=sh", "ls"], "--pager"),
        (["less", "+!id", "hello.txt"], "+!id"),
        (["zip", "-T", "-TT", "sh", "a.zip", "hello.txt"], "-T"),
        (["vim", "-c", "!id", "hello.txt"], "edit_file"),
        (["ed", "hello.txt"], "edit_file"),
        (["env", "LESSOPEN=|sh -c id", "less", "hello.txt"], "LESSOPEN"),
        (["env", "PAGER=sh", "man", "ls"], "PAGER"),
        (["find", ".", "-exec", "sed", "1e id", "{}", ";"], "--sandbox"),
        (["sort", "--compress-program=sh", "hello.txt"], "--compress-program"),
        (["sort", "--compress-p=sh", "hello.txt"], "--compress-p"),
        (["split", "--filter=sh -c id", "hello.txt"], "--filter"),
        (["sdiff", "--diff-program=sh", "a", "b"], "--diff-program"),
        (["rg", "--pre=sh", "x"], "--pre"),
        (["fd", "-x", "sh"], "-x"),
        (["wget", "--use-askpass=sh", "http://127.0.0.1:9/"], "--use-askpass"),
    ],
)
def test_options_that_start_programs_are_refused(
    workspace: Path, ns: CountingSandbox, argv: list[str], named: str
) -> None:
    error = refused(workspace, ns, sub=FULL, argv=argv)
    assert error.code is RefusalCode.BINARY_NOT_ALLOWED
    assert named in error.reason
    assert ns.specs == []


def test_sed_runs_sandboxed(workspace: Path, ns: CountingSandbox) -> None:
    plain = run(workspace, ns, sub=FULL, argv=["sed", "-n", "1p", "hello.txt"])
    assert plain.content == "hello from the workspace\n"
    for argv in (
        ["sed", "1e echo SED-RAN", "hello.txt"],
        ["sed", "s/hello/echo SED-RAN/e", "hello.txt"],
    ):
        out = run(workspace, ns, sub=FULL, argv=argv)
        assert "SED-RAN" not in out.structured["stdout"]  # type: ignore[index]
        assert out.exit_code != 0
    nested = run(
        workspace,
        ns,
        sub=FULL,
        argv=[
            "find",
            ".",
            "-name",
            "hello.txt",
            "-exec",
            "sed",
            "--sandbox",
            "-n",
            "1p",
            "{}",
            ";",
        ],
    )
    assert nested.content == "hello from the workspace\n"


def test_the_same_programs_do_their_allowed_jobs(workspace: Path, ns: CountingSandbox) -> None:
    assert run(workspace, ns, sub=FULL, argv=["awk", "{ print $1 }", "hello.txt"]).content == (
        "hello\n"
    )
    tar = run(workspace, ns, sub=FULL, argv=["tar", "-cf", "a.tar", "hello.txt"])
    assert tar.exit_code == 0 and (workspace / "a.tar").exists()
    listing = run(workspace, ns, sub=FULL, argv=["tar", "tf", "a.tar"])
    assert listing.content == "hello.txt\n"
    ordered = run(workspace, ns, sub=FULL, argv=["sort", "--reverse", "hello.txt"])
    assert ordered.content == "hello from the workspace\n"
    assert run(workspace, ns, sub=FULL, argv=["env", "LANG=C", "cat", "hello.txt"]).exit_code == 0
