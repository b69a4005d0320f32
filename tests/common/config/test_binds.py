"""Read-only binds (`sandboxing.namespace.extra_ro_binds`, an MCP server's `ro_binds`):
one the sandbox would hide is refused at load, one missing on this host at
`synthorg_config check`, each naming the entry and why."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.config import ConfigError, load_config
from common.testing import BASE_DIR, python_argv


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "synthorg.yaml"
    path.write_text(text)
    return path


def _namespace(binds: list[str]) -> str:
    return f"sandboxing:\n  namespace:\n    extra_ro_binds: {binds!r}\n".replace("'", '"')


def _server(binds: list[str], transport: str = "stdio") -> str:
    where = (
        "command: [node, /opt/mcp/index.js]" if transport == "stdio" else "url: https://m.example/"
    )
    return (
        f"mcp_servers:\n  - name: files\n    transport: {transport}\n    {where}\n"
        f"    ro_binds: {binds!r}\n"
    ).replace("'", '"')


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/tmp/mcp", "at or under /tmp"),
        ("/tmp", "at or under /tmp"),
        ("/opt/../tmp/mcp", "without '..'"),
        ("/workspace/lib", "at or under /workspace"),
        ("/proc/1", "at or under /proc"),
        ("/dev/shm/x", "at or under /dev"),
        ("/run/synthorg-egress/x", "at or under /run/synthorg-egress"),
        ("/", "the whole host"),
        ("opt/mcp", "must be an absolute path"),
    ],
)
def test_a_bind_the_sandbox_would_hide_is_refused_at_load(
    tmp_path: Path, path: str, why: str
) -> None:
    for text, field in (
        (_namespace(["/usr/share", path]), "sandboxing.namespace.extra_ro_binds"),
        (_server([path]), "mcp_servers[0].ro_binds"),
    ):
        with pytest.raises(ConfigError) as caught:
            load_config(_write(tmp_path, text))
        said = str(caught.value)
        assert f": {field}: " in said and repr(path) in said and why in said, said


def test_binds_elsewhere_load() -> None:
    # Control: beside the sandbox's own mounts (not under them) is fine.
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(
            Path(tmp),
            _namespace(["/var/tmp/mcp", "/tmpfoo", "/opt/mcp", "/run/other"])
            + _server(["/var/lib/mcp/files", "/usr/lib/node_modules"]),
        )
        config = load_config(path)
    assert config.sandboxing.namespace.extra_ro_binds[0] == "/var/tmp/mcp"
    assert config.mcp_servers[0].ro_binds == ("/var/lib/mcp/files", "/usr/lib/node_modules")


def test_ro_binds_are_for_stdio_servers_only(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(_write(tmp_path, _server(["/opt/mcp"], transport="http")))
    assert "ro_binds: only for transport stdio" in str(caught.value)


def _check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        python_argv("manage.py", "synthorg_config", "check", str(path)),
        cwd=BASE_DIR, env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A directory a bind may name (never under /tmp, wherever pytest keeps its own)."""
    made = Path(tempfile.mkdtemp(prefix="synthorg-binds.", dir="/var/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def test_check_refuses_a_bind_missing_on_this_host_and_passes_it_once_there(
    tmp_path: Path, outside_tmp: Path
) -> None:
    code = outside_tmp / "mcp-code"
    shared = outside_tmp / "shared"
    shared.mkdir()
    config = _write(tmp_path, _namespace([str(shared), "/nonexistent/lib"]) + _server([str(code)]))
    result = _check(config)
    assert result.returncode == 1, result.stdout
    assert "valid" not in result.stdout
    assert (
        f"{config}: sandboxing.namespace.extra_ro_binds[1]: /nonexistent/lib does not exist"
        in result.stderr
    ), result.stderr
    assert f"{config}: mcp_servers[0].ro_binds[0]: {code} does not exist" in result.stderr
    assert str(shared) not in result.stderr, "an existing bind is not named"
    # Control: once both exist, the same file is valid.
    code.mkdir()
    config.write_text(_namespace([str(shared)]) + _server([str(code)]))
    passed = _check(config)
    assert passed.returncode == 0, passed.stderr
    assert "valid" in passed.stdout
