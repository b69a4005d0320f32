"""An agent attacking git's own machinery: config races, links under .git, redirects, long names.

Each attack runs through the real namespace sandbox (the version_control
default) beside a positive control: the same setup where the allowed thing
works, and where useful the same attack against git run without the
console's launcher, to show the attack is real.
"""

from __future__ import annotations

import http.server
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.git_fixtures import (
    DumbGitServer,
    RecordingSandbox,
    SmartGitServer,
    git,
    git_context,
    grant,
    make_repo,
    publish_bare,
    publish_pushable,
    sandbox_user_ready,
)
from tests.tools_app.net.servers import LoopbackDnsServer
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolRefusedError
from tools_app.builtin.git.inside.launcher import read_spec
from tools_app.builtin.git.tools import (
    GitCloneTool,
    GitPushTool,
    git_commit,
    git_diff,
    git_log,
    git_status,
)
from tools_app.egress import LocalEgressGateway, NetworkGrant
from tools_app.net.dnswire import TYPE_A
from tools_app.sandbox.protocol import MountMode, NetworkPolicy, SandboxSpec, WorkspaceMount

ROOT = Path("/tmp/synthorg-test-workspaces")
RACE_SECONDS = 30.0
RACE_DIFFS = 12
FILTER_OUTPUT = "FILTER-RAN"


@pytest.fixture(scope="module", autouse=True)
def _sandbox_user() -> None:
    sandbox_user_ready()


def _new_workspace(prefix: str) -> Path:
    ROOT.mkdir(mode=0o755, exist_ok=True)
    os.chmod(ROOT, 0o755)
    path = ROOT / f"{prefix}-{uuid.uuid4().hex[:12]}"
    path.mkdir(mode=0o755)
    return path


@pytest.fixture
def workspace() -> Iterator[Path]:
    path = _new_workspace("git-own")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def other_workspace() -> Iterator[Path]:
    """Another agent's workspace with its own repository."""
    path = _new_workspace("git-other")
    repo = make_repo(path / "proj")
    git(repo, "commit", "-q", "--allow-empty", "-m", "other agent's secret history")
    grant(path)
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


def _plain_git(sandbox: RecordingSandbox, workspace: Path, *args: str) -> tuple[int | None, str]:
    """Git run in the same sandbox WITHOUT the console's launcher (what the attack targets)."""
    result = sandbox.inner.run(
        SandboxSpec(
            argv=("git", "-c", "safe.directory=*", *args),
            workspace=WorkspaceMount(workspace, MountMode.READ_ONLY),
            cwd="proj",
            timeout_seconds=30,
        )
    )
    return result.exit_code, result.stdout + result.stderr


# --- the config-swap race ----------------------------------------------------------


def _write_readable(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, 0o644)


class ConfigFlipper:
    """Two writers flipping .git/config between a benign and a filter-defining version."""

    def __init__(self, config: Path, benign: bytes, evil: bytes) -> None:
        self.config = config
        self.benign = benign
        self.evil = evil
        self.stop = threading.Event()
        self.flips = 0
        self._threads = [
            threading.Thread(target=self._replace_with_evil, daemon=True),
            threading.Thread(target=self._rewrite_benign, daemon=True),
        ]

    def _replace_with_evil(self) -> None:
        staged = self.config.with_name("config.staged")
        while not self.stop.is_set():
            _write_readable(staged, self.evil)
            os.replace(staged, self.config)
            self.flips += 1
            time.sleep(0.002)

    def _rewrite_benign(self) -> None:
        while not self.stop.is_set():
            _write_readable(self.config, self.benign)
            self.flips += 1
            time.sleep(0.002)

    def __enter__(self) -> ConfigFlipper:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=5)


def test_config_swap_race_never_runs_the_filter(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    (repo / ".gitattributes").write_text("* filter=x\n")
    (repo / "README.md").write_text("changed by the agent\n")
    config = repo / ".git" / "config"
    benign = config.read_bytes()
    evil = benign + f'[filter "x"]\n\tclean = echo {FILTER_OUTPUT}\n'.encode()
    grant(workspace)
    context = git_context(workspace, sandbox)

    # Positive control 1: the same setup, benign config: git_diff works.
    control = git_diff.run(context, {"path": "proj"})
    assert "+changed by the agent" in control.content

    # Positive control 2: git without the console's launcher does run the filter.
    _write_readable(config, evil)
    _, output = _plain_git(sandbox, workspace, "diff")
    assert f"+{FILTER_OUTPUT}" in output

    outputs: list[str] = []
    refusals: list[str] = []
    deadline = time.monotonic() + RACE_SECONDS
    with ConfigFlipper(config, benign, evil) as flipper:
        while len(outputs) + len(refusals) < RACE_DIFFS and time.monotonic() < deadline:
            try:
                outputs.append(git_diff.run(context, {"path": "proj"}).content)
            except ToolRefusedError as exc:
                refusals.append(exc.reason)
            except ToolFailedError as exc:  # a half-written file git cannot parse
                refusals.append(exc.message)
        flips = flipper.flips
    assert flips > RACE_DIFFS  # the file really moved under the calls
    assert outputs or refusals
    assert all(FILTER_OUTPUT not in text for text in outputs)
    for reason in refusals:
        assert "filter.x.clean" in reason or "config" in reason
    _write_readable(config, benign)
    assert "+changed by the agent" in git_diff.run(context, {"path": "proj"}).content


def test_filter_defined_in_config_is_refused_not_run(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    (repo / ".gitattributes").write_text("* filter=x\n")
    (repo / "README.md").write_text("changed\n")
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(f'[filter "x"]\n\tclean = echo {FILTER_OUTPUT}\n')
    grant(workspace)
    with pytest.raises(ToolRefusedError) as caught:
        git_diff.run(git_context(workspace, sandbox), {"path": "proj"})
    assert "'filter.x.clean'" in caught.value.reason


def test_attributes_naming_an_undefined_driver_are_inert(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    """A driver the attributes name but no checked config defines does nothing."""
    (repo / ".gitattributes").write_text("* filter=x diff=x merge=x\n")
    (repo / "README.md").write_text("changed\n")
    grant(workspace)
    context = git_context(workspace, sandbox)
    assert "+changed" in git_diff.run(context, {"path": "proj"}).content
    commit = git_commit.run(context, {"path": "proj", "message": "m", "all": True})
    assert commit.structured is not None
    assert git(repo, "show", "HEAD:README.md") == "changed\n"


# --- links under .git into another agent's repository --------------------------------


@pytest.mark.parametrize("entry", ["objects", "refs", "HEAD", "refs/heads/main", "logs"])
def test_links_under_git_dir_are_refused(
    workspace: Path,
    repo: Path,
    other_workspace: Path,
    sandbox: RecordingSandbox,
    entry: str,
) -> None:
    other_git = other_workspace / "proj" / ".git"
    other_head = git(other_workspace / "proj", "rev-parse", "HEAD")
    context = git_context(workspace, sandbox)
    (repo / "README.md").write_text("agent change\n")
    grant(workspace)

    # Positive control: the repository without the link reads and commits.
    assert "## main" in git_status.run(context, {"path": "proj"}).content
    git_commit.run(context, {"path": "proj", "message": "own commit", "all": True})

    mine = repo / ".git" / entry
    if mine.is_dir():
        shutil.rmtree(mine)
    else:
        mine.unlink()
    mine.symlink_to(other_git / entry)
    (repo / "README.md").write_text("another change\n")
    grant(workspace)
    for tool, arguments in (
        (git_log, {"path": "proj"}),
        (git_status, {"path": "proj"}),
        (git_commit, {"path": "proj", "message": "into the other repo", "all": True}),
    ):
        with pytest.raises(ToolRefusedError) as caught:
            tool.run(context, arguments)
        assert caught.value.code is RefusalCode.PATH_NOT_REACHABLE
        assert f".git/{entry}" in caught.value.reason
        assert "symbolic link" in caught.value.reason
    assert git(other_workspace / "proj", "rev-parse", "HEAD") == other_head


def test_the_namespace_hides_other_workspaces_from_git_itself(
    workspace: Path, repo: Path, other_workspace: Path, sandbox: RecordingSandbox
) -> None:
    """The second wall: git run without the launcher cannot read through such a link either."""
    code, output = _plain_git(sandbox, workspace, "log", "--format=%s")
    assert code == 0 and "second commit" in output  # control: plain git works here
    shutil.rmtree(repo / ".git" / "objects")
    (repo / ".git" / "objects").symlink_to(other_workspace / "proj" / ".git" / "objects")
    (repo / ".git" / "refs" / "heads" / "main").write_text(
        git(other_workspace / "proj", "rev-parse", "HEAD")
    )
    grant(workspace)
    code, output = _plain_git(sandbox, workspace, "log", "--format=%s")
    assert code != 0
    assert "secret history" not in output


# --- clone redirects -------------------------------------------------------------------


class RedirectServer:
    """Answers every request on 127.0.0.1 with a redirect to ``target`` (same path)."""

    def __init__(self, target: str) -> None:
        self.requests: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                self.send_response(302)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def __enter__(self) -> RedirectServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[DumbGitServer]:
    source = make_repo(tmp_path / "src")
    root = tmp_path / "served"
    root.mkdir()
    publish_bare(source, root, "repo.git")
    with DumbGitServer(root) as server:
        yield server


def _clone_settings(port: int) -> dict[str, Any]:
    return {"hostname_allowlist": [f"127.0.0.1:{port}"], "allow_plain_http": True}


def test_clone_does_not_follow_a_redirect_to_a_refused_port(
    workspace: Path, served: DumbGitServer, sandbox: RecordingSandbox
) -> None:
    grant(workspace)
    with RedirectServer(f"http://127.0.0.1:{served.port}") as redirector:
        allowed = git_context(workspace, sandbox, settings=_clone_settings(redirector.port))
        # The served port itself is refused under this allowlist...
        with pytest.raises(ToolRefusedError) as caught:
            GitCloneTool().run(
                allowed,
                {"url": f"http://127.0.0.1:{served.port}/repo.git", "directory": "direct"},
            )
        assert caught.value.code is RefusalCode.HOST_NOT_ALLOWED
        # ...and a redirect from the allowed port does not reach it either.
        with pytest.raises(ToolFailedError):
            GitCloneTool().run(
                allowed,
                {"url": f"http://127.0.0.1:{redirector.port}/repo.git", "directory": "copy"},
            )
        assert redirector.requests  # git did ask the allowed server
    assert served.requests == []
    assert not (workspace / "copy" / "README.md").exists()


def test_clone_from_the_allowed_server_without_redirect_works(
    workspace: Path, served: DumbGitServer, sandbox: RecordingSandbox
) -> None:
    grant(workspace)
    context = git_context(workspace, sandbox, settings=_clone_settings(served.port))
    GitCloneTool().run(
        context, {"url": f"http://127.0.0.1:{served.port}/repo.git", "directory": "copy"}
    )
    assert (workspace / "copy" / "README.md").read_text() == "hello\nworld\n"
    assert served.requests


# --- names longer than the file system allows ------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (git_status, {"path": "a" * 256}),
        (git_status, {"path": f"proj/{'é' * 128}"}),  # 256 bytes in UTF-8
        (git_diff, {"path": "proj", "paths": [f"dir/{'x' * 300}"]}),
        (GitCloneTool(), {"url": "https://example.com/r.git", "directory": "d" * 256}),
    ],
)
def test_overlong_path_names_are_refused_clearly(
    workspace: Path, repo: Path, sandbox: RecordingSandbox, tool: Any, arguments: dict
) -> None:
    with pytest.raises(ToolRefusedError) as caught:
        tool.run(git_context(workspace, sandbox), arguments)
    assert caught.value.code is RefusalCode.INVALID_ARGUMENT
    assert "longer than 255 bytes" in caught.value.reason
    assert sandbox.specs == []


def test_names_of_255_bytes_are_accepted(
    workspace: Path, repo: Path, sandbox: RecordingSandbox
) -> None:
    context = git_context(workspace, sandbox)
    assert git_diff.run(context, {"path": "proj", "paths": ["x" * 255]}).content == ""
    with pytest.raises(ToolRefusedError) as caught:
        git_status.run(context, {"path": "b" * 255})
    assert "is not a directory" in caught.value.reason  # judged as a path, not refused


# --- push goes where it was checked -----------------------------------------------------


@pytest.fixture
def pushable(repo: Path, tmp_path: Path) -> Iterator[tuple[SmartGitServer, Path]]:
    """The agent's repository published (same history) behind a smart-HTTP server."""
    root = tmp_path / "smart"
    root.mkdir()
    bare = publish_pushable(repo, root, "repo.git")
    with SmartGitServer(root) as server:
        yield server, bare


def test_push_reaches_the_checked_url_not_a_remote_named_after_it(
    workspace: Path,
    repo: Path,
    pushable: tuple[SmartGitServer, Path],
    served: DumbGitServer,
    sandbox: RecordingSandbox,
) -> None:
    server, bare = pushable
    url = f"http://127.0.0.1:{server.port}/repo.git"
    elsewhere = f"http://127.0.0.1:{served.port}/repo.git"
    git(repo, "remote", "add", "origin", url)
    git(repo, "commit", "-q", "--allow-empty", "-m", "pushed by the agent")
    grant(workspace)
    settings = {
        "hostname_allowlist": [f"127.0.0.1:{server.port}", f"127.0.0.1:{served.port}"],
        "allow_plain_http": True,
    }
    context = git_context(workspace, sandbox, settings=settings)

    # Positive control: the push arrives.
    GitPushTool().run(context, {"path": "proj", "branch": "main"})
    assert git(bare, "log", "-1", "--format=%s").strip() == "pushed by the agent"

    # A remote section named after the checked URL, sending pushes elsewhere.
    git(repo, "config", f"remote.{url}.pushurl", elsewhere)
    git(repo, "commit", "-q", "--allow-empty", "-m", "second push")
    grant(workspace)
    # Control: git without the launcher follows it (through a proxy open to both ports).
    ports = (f"127.0.0.1:{server.port}", f"127.0.0.1:{served.port}")
    both = NetworkGrant(mode="allowlist_only", allowed_hosts=ports)
    with LocalEgressGateway(agent_name="builder").session(both) as egress:
        plain = sandbox.inner.run(
            SandboxSpec(
                argv=("git", "-c", "safe.directory=*", "push", url, "main"),
                workspace=WorkspaceMount(workspace, MountMode.READ_WRITE),
                cwd="proj",
                timeout_seconds=30,
                network=NetworkPolicy.PROXY,
                egress_dir=egress.directory,
            )
        )
    assert served.requests, plain.stderr
    served.requests.clear()

    GitPushTool().run(context, {"path": "proj", "branch": "main"})
    assert git(bare, "log", "-1", "--format=%s").strip() == "second push"
    assert served.requests == []


# --- ssh clones go to the checked address ---------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@ssh.test:org/repo.git", "git@127.0.0.1:org/repo.git"),
        ("ssh://git@ssh.test:2222/org/repo.git", "ssh://git@127.0.0.1:2222/org/repo.git"),
    ],
)
def test_ssh_clone_connects_to_the_checked_address_under_the_name(
    workspace: Path, sandbox: RecordingSandbox, url: str, expected: str
) -> None:
    """No name is resolved inside the sandbox: git gets the address, ssh the name's key."""
    grant(workspace)

    def answer(name: str, qtype: int, seen: int) -> list[str]:
        return ["127.0.0.1"] if name == "ssh.test" and qtype == TYPE_A else []

    with LoopbackDnsServer(answer) as dns:
        settings = {
            "hostname_allowlist": ["ssh.test"],
            "dns_server": dns.host,
            "dns_port": dns.port,
        }
        context = git_context(workspace, sandbox, settings=settings)
        with pytest.raises(ToolFailedError):  # no ssh server for this host key here
            GitCloneTool().run(context, {"url": url, "directory": "copy"})
    spec, args = read_spec(list(sandbox.specs[-1].argv[5:]))
    assert expected in args
    assert "ssh.test" not in " ".join(args)
    ssh = next(e for e in spec["env"] if e.startswith("GIT_SSH_COMMAND="))
    assert "-o HostKeyAlias=ssh.test" in ssh
    # ssh's only way out is one tunnel through the call's egress proxy.
    assert "ProxyCommand=/usr/bin/python3 -I -S /run/synthorg-egress/forward.py --connect" in ssh
    assert "ProxyCommand=none" not in ssh
