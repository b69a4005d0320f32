"""Where read-only binds go: a server's ``ro_binds`` into that server's sandbox only, the
namespace ``extra_ro_binds`` into every one; and why a bind under the sandbox's own
mounts is refused (the sandbox hides it, shown for real).

The attack through the public API (an agent's shell cannot read a server's code, while
the server itself starts and lists) is in ``test_failure_visibility``.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.config.binds import covering_mount
from common.config.mcp import McpServer
from common.config.sandbox import SandboxingConfig
from common.vocabulary.sandbox import SANDBOX_OWN_MOUNTS
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tests.tools_app.sandbox.conftest import make_workspace
from tools_app.bridge.launch import stdio_launch
from tools_app.egress.mount import MOUNT_POINT
from tools_app.sandbox.backends.namespace import TMP_INSIDE, WORKSPACE_INSIDE, NamespaceSandbox
from tools_app.sandbox.errors import SandboxUnavailableError
from tools_app.sandbox.factory import build_backend
from tools_app.sandbox.protocol import Limits, NetworkPolicy, SandboxSpec, WorkspaceMount

MARKER = "BIND-MARKER-7c1e"
# bubblewrap's options that mount something, and how many paths each takes.
_MOUNTS = {"--proc": 1, "--dev": 1, "--tmpfs": 1, "--dir": 1, "--bind": 2, "--ro-bind": 2}


def _directory(under: str) -> Path:
    made = Path(tempfile.mkdtemp(prefix="synthorg-bind.", dir=under))
    made.chmod(0o755)
    (made / "code.js").write_text(MARKER)
    (made / "code.js").chmod(0o644)
    return made


@pytest.fixture
def code_dir() -> Iterator[Path]:
    made = _directory("/var/tmp")
    yield made
    shutil.rmtree(made, ignore_errors=True)


def _server(binds: list[str], sandbox: str = "namespace") -> McpServer:
    return McpServer.model_validate(
        {
            "name": "coded", "transport": "stdio", "command": ["node", "/opt/x/index.js"],
            "sandbox": sandbox, "ro_binds": binds,
        }
    )  # fmt: skip


def test_every_mount_made_after_the_binds_is_one_the_config_refuses_binds_under(
    tmp_path: Path,
) -> None:
    assert {TMP_INSIDE, WORKSPACE_INSIDE, MOUNT_POINT} <= set(SANDBOX_OWN_MOUNTS)
    sandbox = NamespaceSandbox(extra_ro_binds=["/opt/bound"])
    spec = SandboxSpec(
        argv=("true",), workspace=WorkspaceMount(tmp_path), network=NetworkPolicy.PROXY,
        egress_dir=tmp_path,
    )  # fmt: skip
    argv = sandbox.bwrap_argv(spec, tmp_path, WORKSPACE_INSIDE)
    after = argv[argv.index("/opt/bound") + 2 : argv.index("--")]
    later = [after[i + _MOUNTS[word]] for i, word in enumerate(after) if word in _MOUNTS]
    assert later, "the sandbox mounts things of its own after the binds"
    assert all(covering_mount(path) for path in later), later
    # Control: the binds themselves and the system directories are no such mount.
    assert covering_mount("/opt/bound") is None and covering_mount("/usr") is None


def test_a_bind_under_the_private_tmp_is_hidden_and_one_elsewhere_is_seen() -> None:
    """Why the config refuses it: bound before the private /tmp, it is covered by it."""
    hidden, seen = _directory("/tmp"), _directory("/var/tmp")
    workspace = make_workspace(writable=True)
    namespace_backend()  # bubblewrap works here
    sandbox = NamespaceSandbox(extra_ro_binds=[str(hidden), str(seen)])
    try:
        for directory, present in ((hidden, False), (seen, True)):
            result = sandbox.run(
                SandboxSpec(
                    argv=("cat", f"{directory}/code.js"),
                    workspace=WorkspaceMount(workspace),
                    timeout_seconds=30,
                    limits=Limits(),
                )
            )
            assert (MARKER in result.stdout) is present, (directory, result)
    finally:
        for directory in (hidden, seen, workspace):
            shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.parametrize("sandbox", ["namespace", "docker"])
def test_a_servers_binds_go_into_its_sandbox_and_no_agents(code_dir: Path, sandbox: str) -> None:
    config = SandboxingConfig.model_validate({"namespace": {"extra_ro_binds": ["/usr/share"]}})
    launch = stdio_launch(_server([str(code_dir)], sandbox), workspace=None, config=config)
    try:
        words = launch.argv
        if sandbox == "namespace":
            at = words.index(str(code_dir))
            assert words[at - 1 : at + 2] == ["--ro-bind-try", str(code_dir), str(code_dir)]
            assert "/usr/share" in words, "the shared binds are there too"
        else:
            assert f"{code_dir}:{code_dir}:ro" in words
    finally:
        launch.cleanup()
    # The agents' namespace sandbox, built from the same config: the shared bind only.
    agents = build_backend("namespace", config)
    assert isinstance(agents, NamespaceSandbox)
    assert agents.extra_ro_binds == ("/usr/share",)
    # Control: a server without ro_binds gets no such bind either.
    bare = stdio_launch(_server([]), workspace=None, config=config)
    try:
        assert str(code_dir) not in bare.argv
    finally:
        bare.cleanup()


def test_a_server_whose_bind_is_missing_is_refused_naming_it(code_dir: Path) -> None:
    missing = code_dir / "not-installed"
    with pytest.raises(SandboxUnavailableError) as caught:
        stdio_launch(_server([str(code_dir), str(missing)]), workspace=None,
                     config=SandboxingConfig())  # fmt: skip
    assert str(missing) in caught.value.reason and "coded" in caught.value.reason
    assert str(code_dir) + "," not in caught.value.reason, "only the missing one is named"
