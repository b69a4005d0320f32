"""Git tools through the real namespace sandbox (their default): happy paths and attacks."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools_app.builtin.git_fixtures import (
    DumbGitServer,
    RecordingSandbox,
    git,
    git_context,
    grant,
    make_repo,
    publish_bare,
    sandbox_user_ready,
)
from tests.tools_app.net.servers import LoopbackDnsServer
from tools_app.builtin.base import BuiltinTool, RefusalCode, ToolRefusedError
from tools_app.builtin.git.command import LAUNCHER_ARGV
from tools_app.builtin.git.inside.launcher import read_spec
from tools_app.builtin.git.tools import (
    TOOLS,
    GitCloneTool,
    GitPushTool,
    git_branch,
    git_commit,
    git_diff,
    git_log,
    git_status,
)
from tools_app.contracts import ToolRegistry
from tools_app.net.dnswire import TYPE_A
from tools_app.sandbox.backends.subprocess import SubprocessSandbox

ROOT = Path("/tmp/synthorg-test-workspaces")


@pytest.fixture(scope="module", autouse=True)
def _sandbox_user() -> None:
    sandbox_user_ready()


@pytest.fixture
def workspace() -> Iterator[Path]:
    ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(ROOT, 0o755)
    path = ROOT / f"git-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def repo(workspace: Path) -> Path:
    path = make_repo(workspace / "proj")
    grant(workspace)
    return path


@pytest.fixture
def sandbox() -> RecordingSandbox:
    return RecordingSandbox()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[DumbGitServer]:
    source = make_repo(tmp_path / "src")
    root = tmp_path / "served"
    root.mkdir()
    publish_bare(source, root, "repo.git")
    with DumbGitServer(root) as server:
        yield server


def refused(tool: BuiltinTool, context: object, arguments: dict[str, object]) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        tool.run(context, arguments)  # type: ignore[arg-type]
    return caught.value


def test_tools_satisfy_the_protocol_and_register() -> None:
    registry = ToolRegistry()
    for tool in TOOLS:
        assert isinstance(tool, BuiltinTool)
        registry.register(tool.contract)
        assert tool.contract.category == "version_control"
    actions = {t.contract.name: t.contract.action_type for t in TOOLS}
    assert actions == {
        "git_status": "vcs:read",
        "git_log": "vcs:read",
        "git_diff": "vcs:read",
        "git_branch": "vcs:branch",
        "git_commit": "vcs:commit",
        "git_clone": "vcs:clone",
        "git_push": "vcs:push",
    }


# --- happy paths -------------------------------------------------------------


def test_status_log_diff_commit_and_branch(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    context = git_context(workspace, sandbox)
    (repo / "README.md").write_text("hello\nworld\nagain\n")
    (repo / "new.txt").write_text("new\n")
    grant(workspace)

    status = git_status.run(context, {"path": "proj"})
    assert "## main" in status.content
    assert " M README.md" in status.content
    assert "?? new.txt" in status.content

    diff = git_diff.run(context, {"path": "proj"})
    assert "+again" in diff.content
    assert "a/README.md" in diff.content

    commit = git_commit.run(
        context, {"path": "proj", "message": "-m is not an option here", "paths": ["new.txt"]}
    )
    assert commit.structured is not None
    head = git(repo, "rev-parse", "HEAD").strip()
    assert commit.structured["commit"] == head
    assert git(repo, "log", "-1", "--format=%s%n%an").splitlines() == [
        "-m is not an option here",
        "builder",
    ]

    log = git_log.run(context, {"path": "proj", "max_count": 2})
    assert log.structured is not None
    subjects = [c["subject"] for c in log.structured["commits"]]
    assert subjects == ["-m is not an option here", "second commit"]

    git_branch.run(context, {"path": "proj", "action": "create", "name": "feature/x"})
    git_branch.run(context, {"path": "proj", "action": "switch", "name": "feature/x"})
    listing = git_branch.run(context, {"path": "proj"})
    assert "* feature/x" in listing.content
    assert "  main" in listing.content


def test_diff_between_revisions_and_staged(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    context = git_context(workspace, sandbox)
    between = git_diff.run(context, {"path": "proj", "revision": "HEAD~1..HEAD"})
    assert "+world" in between.content
    (repo / "README.md").write_text("staged\n")
    git(repo, "add", "README.md")
    grant(workspace)
    assert "+staged" in git_diff.run(context, {"path": "proj", "staged": True}).content


def test_clone_over_http_is_pinned_to_the_checked_address(
    workspace: Path, served: DumbGitServer, sandbox: RecordingSandbox
) -> None:
    """git.test exists only in the test's DNS server: git can reach it only through the pin."""
    grant(workspace)

    def answer(name: str, qtype: int, seen: int) -> list[str]:
        return ["127.0.0.1"] if name == "git.test" and qtype == TYPE_A else []

    with LoopbackDnsServer(answer) as dns:
        settings = {
            "hostname_allowlist": ["git.test"],
            "allow_plain_http": True,
            "dns_server": dns.host,
            "dns_port": dns.port,
        }
        context = git_context(workspace, sandbox, settings=settings)
        outcome = GitCloneTool().run(
            context, {"url": f"http://git.test:{served.port}/repo.git", "directory": "copy"}
        )
    assert outcome.structured is not None
    assert outcome.structured["address"] == "127.0.0.1"
    assert (workspace / "copy" / "README.md").read_text() == "hello\nworld\n"
    assert served.requests
    options = read_spec(list(sandbox.specs[-1].argv[5:]))[0]["option"]
    assert f"http.curloptResolve=git.test:{served.port}:127.0.0.1" in options


# --- hardening ---------------------------------------------------------------


def test_every_invocation_goes_through_the_launcher(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    git_status.run(git_context(workspace, sandbox), {"path": "proj"})
    assert len(sandbox.specs) == 1  # checked and run in one sandboxed process
    spec = sandbox.specs[0]
    assert spec.argv[:5] == LAUNCHER_ARGV
    launcher, args = read_spec(list(spec.argv[5:]))
    assert args == ["status", "--porcelain=v1", "--branch", "--untracked-files=normal"]
    assert launcher["mode"] == ["repo"]
    for expected in ("GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ALLOW_PROTOCOL="):
        assert expected in launcher["env"]
    for expected in ("core.hooksPath=/dev/null", "core.fsmonitor=false", "credential.helper="):
        assert expected in launcher["option"]
    assert spec.cwd == "proj"
    assert spec.network.value == "none"
    assert not spec.workspace.writable


def test_hooks_are_not_run(workspace: Path, repo: Path, sandbox: RecordingSandbox) -> None:
    marker = workspace / "hook-ran"
    for hook in ("pre-commit", "commit-msg", "post-commit"):
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        path.chmod(0o755)
    (repo / "README.md").write_text("changed\n")
    grant(workspace)
    git_commit.run(git_context(workspace, sandbox), {"path": "proj", "message": "c", "all": True})
    assert git(repo, "log", "-1", "--format=%s").strip() == "c"
    assert not marker.exists()


def test_global_config_is_ignored(workspace: Path, repo: Path, tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "config").write_text("[diff]\n\tnoprefix = true\n")
    os.chmod(tmp_path, 0o755)
    for directory in (xdg, xdg / "git"):
        os.chmod(directory, 0o755)
    os.chmod(xdg / "git" / "config", 0o644)
    # On the subprocess backend the host's files are visible: the hardening must hold alone.
    sandbox = RecordingSandbox(extra_env={"XDG_CONFIG_HOME": str(xdg)}, inner=SubprocessSandbox())
    (repo / "README.md").write_text("changed\n")
    grant(workspace)
    diff = git_diff.run(git_context(workspace, sandbox), {"path": "proj"})
    assert "--- a/README.md" in diff.content


@pytest.mark.parametrize(
    "config",
    [
        "[core]\n\tfsmonitor = /bin/sh -c 'touch {marker}'\n",
        "[core]\n\tworktree = /etc\n",
        "[core]\n\tsshCommand = sh -c 'touch {marker}'\n",
        "[diff]\n\texternal = /bin/sh -c 'touch {marker}'\n",
        '[filter "x"]\n\tclean = touch {marker}\n',
        "[include]\n\tpath = /etc/gitconfig\n",
        '[url "file:///etc/"]\n\tinsteadOf = https://example.com/\n',
        "[core]\n\tpager = touch {marker}\n",
        '[remote "origin"]\n\tuploadpack = touch {marker}\n',
        '[remote "origin"]\n\tvcs = touch\n',
        "[alias]\n\tstatus = !touch {marker}\n",
        "[pager]\n\tstatus = touch {marker}\n",
        '[diff "x"]\n\ttextconv = touch {marker}\n',
        '[merge "x"]\n\tdriver = touch {marker}\n',
        '[includeIf "gitdir:/"]\n\tpath = /etc/gitconfig\n',
        "[credential]\n\thelper = !touch {marker}\n",
        "[gpg]\n\tprogram = touch\n",
        '[protocol "ext"]\n\tallow = always\n',
        "[http]\n\tproxy = http://127.0.0.1:9/\n",
        "[core]\n\talternateRefsCommand = touch {marker}\n",
        "[sequence]\n\teditor = touch {marker}\n",
        "[extensions]\n\tpartialClone = origin\n",
    ],
)
def test_dangerous_repository_config_is_refused(
    workspace: Path, repo: Path, sandbox: RecordingSandbox, config: str
) -> None:
    marker = workspace / "config-ran"
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(config.format(marker=marker))
    error = refused(git_status, git_context(workspace, sandbox), {"path": "proj"})
    assert error.code is RefusalCode.INVALID_ARGUMENT
    assert "repository's config" in error.reason
    assert not marker.exists()
    assert len(sandbox.specs) == 1  # only the config read ran


# --- argument attacks --------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (git_log, {"revision": "--output=/tmp/pwned"}),
        (git_log, {"revision": "HEAD; touch x"}),
        (git_diff, {"revision": "--output=/tmp/pwned"}),
        (git_diff, {"paths": ["--output=x"]}),
        (git_diff, {"paths": [":(top)../x"]}),
        (git_diff, {"paths": ["../outside"]}),
        (git_branch, {"action": "create", "name": "-D"}),
        (git_branch, {"action": "create", "name": "--upload-pack=touch x"}),
        (git_branch, {"action": "create", "name": "a..b"}),
        (git_branch, {"action": "create", "name": "x", "start_point": "--all"}),
        (git_branch, {"action": "switch", "name": "--detach"}),
        (git_commit, {"message": "m", "paths": ["-A"]}),
    ],
)
def test_flag_injection_is_refused_before_git_runs(
    workspace: Path, repo: Path, sandbox: RecordingSandbox, tool: BuiltinTool, arguments: dict
) -> None:
    error = refused(tool, git_context(workspace, sandbox), {"path": "proj", **arguments})
    assert error.code is RefusalCode.INVALID_ARGUMENT
    assert all("touch" not in " ".join(s.argv) for s in sandbox.specs)
    assert not any(a.startswith("--output") for s in sandbox.specs for a in s.argv)


@pytest.mark.parametrize("path", ["..", "/etc", "proj/../..", "-C/etc", "missing"])
def test_repository_paths_stay_in_the_workspace(
    workspace: Path, repo: Path, sandbox: RecordingSandbox, path: str
) -> None:
    error = refused(git_status, git_context(workspace, sandbox), {"path": path})
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert sandbox.specs == []


def test_symlinked_repository_outside_is_refused(
    workspace: Path, repo: Path, tmp_path: Path, sandbox: RecordingSandbox
) -> None:
    outside = make_repo(tmp_path / "outside")
    (workspace / "link").symlink_to(outside)
    error = refused(git_status, git_context(workspace, sandbox), {"path": "link"})
    assert error.code is RefusalCode.PATH_NOT_REACHABLE


def test_gitfile_indirection_is_refused(
    workspace: Path, tmp_path: Path, sandbox: RecordingSandbox
) -> None:
    outside = make_repo(tmp_path / "outside")
    (workspace / "proj").mkdir()
    (workspace / "proj" / ".git").write_text(f"gitdir: {outside}/.git\n")
    error = refused(git_status, git_context(workspace, sandbox), {"path": "proj"})
    assert "not a git repository" in error.reason
    assert sandbox.specs == []


@pytest.mark.parametrize(
    ("access", "tool", "arguments"),
    [
        ("local_only", GitPushTool(), {"path": "proj", "branch": "main"}),
        ("read_and_branch", git_commit, {"path": "proj", "message": "m"}),
        ("none", git_status, {"path": "proj"}),
        (None, git_status, {"path": "proj"}),
        ("local_only", GitCloneTool(), {"url": "https://example.com/r.git", "directory": "c"}),
    ],
)
def test_git_access_sub_constraint_is_enforced(
    workspace: Path,
    repo: Path,
    sandbox: RecordingSandbox,
    access: str | None,
    tool: BuiltinTool,
    arguments: dict,
) -> None:
    refused(tool, git_context(workspace, sandbox, git_access=access), arguments)
    assert sandbox.specs == []


# --- clone URL attacks ---------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("file:///etc", RefusalCode.INVALID_ARGUMENT),
        ("file://127.0.0.1/srv/repo.git", RefusalCode.INVALID_ARGUMENT),
        ("ext::sh -c touch% /tmp/pwned", RefusalCode.INVALID_ARGUMENT),
        ("fd::17", RefusalCode.INVALID_ARGUMENT),
        ("/srv/repo.git", RefusalCode.INVALID_ARGUMENT),
        ("./repo", RefusalCode.INVALID_ARGUMENT),
        ("../../repo", RefusalCode.INVALID_ARGUMENT),
        ("--upload-pack=touch /tmp/pwned", RefusalCode.INVALID_ARGUMENT),
        ("-u touch", RefusalCode.INVALID_ARGUMENT),
        ("ssh://-oProxyCommand=touch@example.com/r.git", RefusalCode.INVALID_ARGUMENT),
        ("-oProxyCommand=touch@example.com:r.git", RefusalCode.INVALID_ARGUMENT),
        ("https://user:token@example.com/r.git", RefusalCode.INVALID_ARGUMENT),
        ("http://example.com/r.git", RefusalCode.INVALID_ARGUMENT),  # plain http off
        ("git://example.com/r.git", RefusalCode.INVALID_ARGUMENT),
        ("https://127.0.0.1/repo.git", RefusalCode.HOST_NOT_ALLOWED),
        ("https://2130706433/repo.git", RefusalCode.HOST_NOT_ALLOWED),
        ("https://[::ffff:127.0.0.1]/repo.git", RefusalCode.HOST_NOT_ALLOWED),
        ("git@169.254.169.254:repo.git", RefusalCode.HOST_NOT_ALLOWED),
        ("ssh://git@[::1]/repo.git", RefusalCode.HOST_NOT_ALLOWED),
        ("git@10.0.0.1:repo.git", RefusalCode.HOST_NOT_ALLOWED),
    ],
)
def test_clone_urls_are_refused_before_git_runs(
    workspace: Path, sandbox: RecordingSandbox, url: str, code: RefusalCode
) -> None:
    grant(workspace)
    error = refused(GitCloneTool(), git_context(workspace, sandbox), {"url": url, "directory": "c"})
    assert error.code is code
    assert sandbox.specs == []
    assert not Path("/tmp/pwned").exists()


def test_clone_host_resolving_to_loopback_without_allowlist_is_refused(
    workspace: Path, served: DumbGitServer, sandbox: RecordingSandbox
) -> None:
    grant(workspace)
    with LoopbackDnsServer(lambda name, qtype, seen: ["127.0.0.1"]) as dns:
        settings = {"allow_plain_http": True, "dns_server": dns.host, "dns_port": dns.port}
        context = git_context(workspace, sandbox, settings=settings)
        error = refused(
            GitCloneTool(),
            context,
            {"url": f"http://innocent.test:{served.port}/repo.git", "directory": "c"},
        )
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert "loopback" in error.reason
    assert served.requests == []
    assert sandbox.specs == []


def test_ssh_clone_is_refused_when_the_name_moves_before_running(
    workspace: Path, sandbox: RecordingSandbox
) -> None:
    grant(workspace)

    def answer(name: str, qtype: int, seen: int) -> list[str]:
        if name != "ssh.test" or qtype != TYPE_A:
            return []
        return ["127.0.0.1"] if seen == 0 else ["127.0.0.1", "127.0.0.2"]

    with LoopbackDnsServer(answer) as dns:
        settings = {
            "hostname_allowlist": ["ssh.test"],
            "dns_server": dns.host,
            "dns_port": dns.port,
        }
        context = git_context(workspace, sandbox, settings=settings)
        error = refused(
            GitCloneTool(), context, {"url": "git@ssh.test:org/repo.git", "directory": "c"}
        )
        assert dns.count("ssh.test", TYPE_A) == 2  # checked, then re-resolved just before running
    assert error.code is RefusalCode.HOST_NOT_ALLOWED
    assert "127.0.0.2" in error.reason
    assert sandbox.specs == []


def test_clone_into_an_existing_or_outside_directory_is_refused(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    context = git_context(workspace, sandbox)
    assert refused(GitCloneTool(), context, {"url": "https://example.com/r", "directory": "proj"})
    error = refused(GitCloneTool(), context, {"url": "https://example.com/r", "directory": "../x"})
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert sandbox.specs == []


# --- push ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remote_url", "code"),
    [
        ("file:///srv/elsewhere.git", RefusalCode.INVALID_ARGUMENT),
        ("/srv/elsewhere.git", RefusalCode.INVALID_ARGUMENT),
        ("ext::sh -c touch% /tmp/pwned", RefusalCode.INVALID_ARGUMENT),
        ("https://127.0.0.1/repo.git", RefusalCode.HOST_NOT_ALLOWED),
    ],
)
def test_push_checks_the_remote_url_from_the_repository(
    workspace: Path, repo: Path, sandbox: RecordingSandbox, remote_url: str, code: RefusalCode
) -> None:
    git(repo, "remote", "add", "origin", remote_url)
    error = refused(
        GitPushTool(), git_context(workspace, sandbox), {"path": "proj", "branch": "main"}
    )
    assert error.code is code
    assert all("push" not in s.argv for s in sandbox.specs)


def test_push_to_unknown_remote_is_refused(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    error = refused(
        GitPushTool(), git_context(workspace, sandbox), {"path": "proj", "branch": "main"}
    )
    assert "no remote named 'origin'" in error.reason
