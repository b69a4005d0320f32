"""code_runner: runs on the namespace sandbox, never on plain subprocess."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.tools_app.builtin.fs_fixtures import CountingSandbox, make_context, namespace_backend
from tools_app.builtin.base import RefusalCode, ToolFailedError, ToolOutcome, ToolRefusedError
from tools_app.builtin.code import tools as code
from tools_app.contracts import ToolRegistry
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import NetworkPolicy

NETWORK_PROBE = (
    "import socket\n"
    "try:\n"
    "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
    "    print('REACHED')\n"
    "except OSError:\n"
    "    print('blocked')\n"
)


@pytest.fixture
def ns() -> Iterator[CountingSandbox]:
    backend = CountingSandbox(namespace_backend())
    yield backend
    backend.close()


def run(
    ws: Path, sandbox: Any, settings: Mapping[str, Any] | None = None, **arguments: Any
) -> ToolOutcome:
    sub = arguments.pop("sub", {})
    return code.code_runner.run(make_context(ws, sandbox, settings=settings, **sub), arguments)


def test_contract_registers() -> None:
    contract = code.code_runner.contract
    ToolRegistry().register(contract)
    assert contract.category.value == "code_execution"
    assert contract.resolved_action_type == "test:run"


def test_python_runs_in_the_namespace(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, language="python", code="print(open('hello.txt').read().upper())")
    assert out.content == "HELLO FROM THE WORKSPACE\n\n" and out.exit_code == 0
    spec = ns.specs[0]
    assert spec.argv[:3] == ("python3", "-I", "-c") and spec.network is NetworkPolicy.NONE


def test_shell_runs_and_failures_are_reported(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, language="shell", code="echo made > made.txt; cat made.txt; exit 3")
    assert out.exit_code == 3 and out.is_error and "made" in out.content
    assert (workspace / "made.txt").read_text() == "made\n"
    fed = run(
        workspace,
        ns,
        language="python",
        code="import sys; print(sys.stdin.read()[::-1])",
        stdin="abc",
    )
    assert fed.content == "cba\n"


def test_the_snippet_has_no_network_and_no_host_files(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, language="python", code=NETWORK_PROBE)
    assert out.content == "blocked\n"
    out = run(workspace, ns, language="shell", code="ls /root /etc/shadow 2>&1; echo end")
    assert "No such file" in out.content


def test_timeout_stops_the_snippet(workspace: Path, ns: CountingSandbox) -> None:
    out = run(workspace, ns, language="python", code="while True: pass", timeout_seconds=0.5)
    assert out.is_error and out.error_code == "TIMED_OUT"


def test_refuses_on_the_subprocess_backend_and_runs_nothing(workspace: Path) -> None:
    sandbox = CountingSandbox(SubprocessSandbox())
    with pytest.raises(ToolFailedError) as caught:
        run(workspace, sandbox, language="shell", code="touch pwned.txt")
    assert caught.value.code == "SANDBOX_NOT_ISOLATED"
    assert "namespace or docker" in caught.value.message
    assert sandbox.specs == [] and not (workspace / "pwned.txt").exists()


def test_refuses_an_unknown_backend_even_if_it_claims_isolation(workspace: Path) -> None:
    class Pretender(CountingSandbox):
        pass

    sandbox = Pretender(SubprocessSandbox())
    sandbox.name = "k8s"
    sandbox.isolates_network = True
    with pytest.raises(ToolFailedError) as caught:
        run(workspace, sandbox, language="shell", code="touch pwned.txt")
    assert caught.value.code == "SANDBOX_NOT_ISOLATED" and sandbox.specs == []


def test_sub_constraints_can_forbid_or_demand_a_container(
    workspace: Path, ns: CountingSandbox
) -> None:
    with pytest.raises(ToolFailedError) as caught:
        run(workspace, ns, language="shell", code="true", sub={"code_execution": "none"})
    assert caught.value.code == "CODE_EXECUTION_DENIED"
    with pytest.raises(ToolFailedError) as caught:
        run(workspace, ns, language="shell", code="true", sub={"code_execution": "containerized"})
    assert caught.value.code == "SANDBOX_NOT_ISOLATED"
    assert ns.specs == []


def test_arguments_and_limits_are_checked_first(workspace: Path, ns: CountingSandbox) -> None:
    cases: list[tuple[dict[str, Any], RefusalCode]] = [
        ({"language": "ruby", "code": "puts 1"}, RefusalCode.INVALID_ARGUMENT),
        ({"language": "shell", "code": "a\x00b"}, RefusalCode.INVALID_ARGUMENT),
        ({"language": "shell", "code": "x" * 200}, RefusalCode.LIMIT_EXCEEDED),
        ({"language": "shell", "code": "true", "timeout_seconds": 301}, RefusalCode.LIMIT_EXCEEDED),
    ]
    for arguments, expected in cases:
        with pytest.raises(ToolRefusedError) as caught:
            run(workspace, ns, settings={"max_code_bytes": 100}, **arguments)
        assert caught.value.code is expected
    assert ns.specs == []


def test_a_planted_hard_link_stops_the_snippet_before_it_starts(
    workspace: Path, ns: CountingSandbox, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("OUTSIDE THE WORKSPACE")
    outside.chmod(0o644)
    (workspace / "planted.txt").hardlink_to(outside)
    with pytest.raises(ToolRefusedError) as caught:
        run(workspace, ns, language="shell", code="cat planted.txt")
    assert caught.value.code is RefusalCode.PATH_NOT_REACHABLE
    assert "'planted.txt'" in caught.value.reason and "hard link" in caught.value.reason
    assert ns.specs == []  # nothing was started
    # Positive control: without the link the same snippet runs in the sandbox.
    (workspace / "planted.txt").unlink()
    (workspace / "planted.txt").write_text("inside")
    assert run(workspace, ns, language="shell", code="cat planted.txt").content == "inside"
