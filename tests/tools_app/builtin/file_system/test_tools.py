"""The file tools through their real sandboxes: happy paths and an attack list.

The worker-side check (``fs_paths``) never looks at the disk, so every symlink,
hard-link and special-file case below is refused by the runner inside the
sandbox: exactly what a symlink swapped in after the worker's check meets.
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
from tools_app.builtin.base import (
    BuiltinTool,
    RefusalCode,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.file_system import tools as fs
from tools_app.contracts import ToolRegistry
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import (
    MountMode,
    SandboxSpec,
    WorkspaceMount,
)


@pytest.fixture(params=["subprocess", "namespace"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[CountingSandbox]:
    inner = SubprocessSandbox() if request.param == "subprocess" else namespace_backend()
    backend = CountingSandbox(inner)
    yield backend
    backend.close()


@pytest.fixture
def subprocess_sandbox() -> Iterator[CountingSandbox]:
    backend = CountingSandbox(SubprocessSandbox())
    yield backend
    backend.close()


def call(
    tool: BuiltinTool,
    ws: Path,
    sandbox: Any,
    settings: Mapping[str, Any] | None = None,
    scope: str = "workspace_only",
    **arguments: Any,
) -> ToolOutcome:
    context = make_context(ws, sandbox, settings=settings, file_system=scope)
    return tool.run(context, arguments)


def refused(tool: BuiltinTool, ws: Path, sandbox: Any, **kwargs: Any) -> ToolRefusedError:
    with pytest.raises(ToolRefusedError) as caught:
        call(tool, ws, sandbox, **kwargs)
    return caught.value


def failed(tool: BuiltinTool, ws: Path, sandbox: Any, **kwargs: Any) -> ToolFailedError:
    with pytest.raises(ToolFailedError) as caught:
        call(tool, ws, sandbox, **kwargs)
    return caught.value


# -- contracts ------------------------------------------------------------------


def test_every_tool_has_a_registrable_contract_with_a_path_role() -> None:
    registry = ToolRegistry()
    for tool in fs.TOOLS:
        assert isinstance(tool, BuiltinTool)
        registry.register(tool.contract)
        assert tool.contract.category.value == "file_system"
        assert tool.contract.argument_roles["path"].value == "path"
    actions = {t.contract.name: t.contract.resolved_action_type for t in fs.TOOLS}
    assert actions == {
        "read_file": "code:read",
        "write_file": "code:write",
        "edit_file": "code:write",
        "list_directory": "code:read",
        "delete_file": "code:delete",
        "stat": "code:read",
    }


# -- happy paths on both backends -------------------------------------------------


def test_read_file_whole_and_by_range(workspace: Path, sandbox: CountingSandbox) -> None:
    whole = call(fs.read_file, workspace, sandbox, path="hello.txt")
    assert whole.content == "hello from the workspace\n"
    assert whole.structured is not None and whole.structured["next_offset"] is None
    part = call(fs.read_file, workspace, sandbox, path="./hello.txt", offset=6, length=4)
    assert part.content == "from"
    assert part.structured is not None and part.structured["next_offset"] == 10
    assert sandbox.specs[0].workspace.mode is MountMode.READ_ONLY
    assert sandbox.specs[0].argv[:4] == ("python3", "-I", "-S", "-c")


def test_read_file_stops_at_the_limit_and_says_where_to_go_on(
    workspace: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "big.txt").write_text("0123456789" * 5)
    grant(workspace)
    out = call(fs.read_file, workspace, sandbox, settings={"max_read_bytes": 16}, path="big.txt")
    assert out.content == "0123456789012345" and out.truncated
    assert out.structured is not None and out.structured["next_offset"] == 16
    error = refused(
        fs.read_file, workspace, sandbox, settings={"max_read_bytes": 16}, path="big.txt", length=17
    )
    assert error.code is RefusalCode.LIMIT_EXCEEDED


def test_read_file_keeps_multibyte_characters_whole(
    workspace: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "utf8.txt").write_text("aé€😀z", encoding="utf-8")
    grant(workspace)
    out = call(fs.read_file, workspace, sandbox, path="utf8.txt", offset=0, length=5)
    # 'a' (1) + 'é' (2) + two of the three bytes of '€': stop before '€'.
    assert out.content == "aé"
    assert out.structured is not None and out.structured["next_offset"] == 3


def test_binary_files_are_detected_not_shown(workspace: Path, sandbox: CountingSandbox) -> None:
    (workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02binary")
    (workspace / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    grant(workspace)
    for name in ("blob.bin", "latin1.txt"):
        out = call(fs.read_file, workspace, sandbox, path=name)
        assert out.structured is not None and out.structured["binary"] is True
        assert out.structured["content"] == "" and "binary" in out.content


def test_write_file_creates_parents_and_replaces(workspace: Path, sandbox: CountingSandbox) -> None:
    out = call(fs.write_file, workspace, sandbox, path="src/pkg/new.py", content="x = 1\n")
    assert out.structured is not None and out.structured["created"] is True
    assert (workspace / "src/pkg/new.py").read_text() == "x = 1\n"
    assert sandbox.specs[-1].workspace.mode is MountMode.READ_WRITE
    os.chmod(workspace / "src/pkg/new.py", 0o640)
    again = call(fs.write_file, workspace, sandbox, path="src/pkg/new.py", content="x = 2\n")
    assert again.structured is not None and again.structured["created"] is False
    assert (workspace / "src/pkg/new.py").read_text() == "x = 2\n"
    assert (workspace / "src/pkg/new.py").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in (workspace / "src/pkg").iterdir()) == ["new.py"]


def test_write_file_without_overwrite_or_parents(workspace: Path, sandbox: CountingSandbox) -> None:
    error = failed(
        fs.write_file, workspace, sandbox, path="hello.txt", content="no", overwrite=False
    )
    assert error.code == "ALREADY_EXISTS"
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"
    error = failed(
        fs.write_file, workspace, sandbox, path="nodir/x.txt", content="x", create_parents=False
    )
    assert error.code == "NOT_FOUND"
    assert not (workspace / "nodir").exists()


def test_write_file_refuses_content_over_the_limit(
    workspace: Path, subprocess_sandbox: CountingSandbox
) -> None:
    error = refused(
        fs.write_file,
        workspace,
        subprocess_sandbox,
        settings={"max_write_bytes": 8},
        path="x.txt",
        content="123456789",
    )
    assert error.code is RefusalCode.LIMIT_EXCEEDED
    assert subprocess_sandbox.specs == []


def test_edit_file_replaces_exactly_as_many_times_as_asked(
    workspace: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "app.py").write_text("a = 1\nb = 1\nc = 2\n")
    grant(workspace)
    out = call(
        fs.edit_file, workspace, sandbox, path="app.py", old_string="c = 2", new_string="c = 3"
    )
    assert out.structured is not None and out.structured["replacements"] == 1
    assert (workspace / "app.py").read_text() == "a = 1\nb = 1\nc = 3\n"
    error = failed(
        fs.edit_file, workspace, sandbox, path="app.py", old_string="= 1", new_string="= 9"
    )
    assert error.code == "MATCH_COUNT_MISMATCH" and "found 2" in error.message
    error = failed(
        fs.edit_file, workspace, sandbox, path="app.py", old_string="zzz", new_string="y"
    )
    assert error.code == "MATCH_COUNT_MISMATCH" and "found 0" in error.message
    assert (workspace / "app.py").read_text() == "a = 1\nb = 1\nc = 3\n"
    out = call(
        fs.edit_file,
        workspace,
        sandbox,
        path="app.py",
        old_string="= 1",
        new_string="= 9",
        expected_replacements=2,
    )
    assert (workspace / "app.py").read_text() == "a = 9\nb = 9\nc = 3\n"


def test_list_directory_sorts_limits_and_hides_credentials(
    workspace: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "src").mkdir()
    (workspace / "b.txt").write_text("bb")
    (workspace / ".ssh").mkdir()
    (workspace / "link").symlink_to("hello.txt")
    grant(workspace)
    out = call(fs.list_directory, workspace, sandbox, path=".")
    assert out.structured is not None
    entries = [(e["name"], e["type"]) for e in out.structured["entries"]]
    assert entries == [
        ("b.txt", "file"),
        ("hello.txt", "file"),
        ("link", "symlink"),
        ("src", "directory"),
    ]
    limited = call(fs.list_directory, workspace, sandbox, settings={"max_entries": 2})
    assert limited.truncated and limited.structured is not None
    assert limited.structured["total"] == 4 and len(limited.structured["entries"]) == 2


def test_delete_file_files_and_directories(workspace: Path, sandbox: CountingSandbox) -> None:
    (workspace / "tree/sub").mkdir(parents=True)
    (workspace / "tree/sub/f.txt").write_text("x")
    grant(workspace)
    call(fs.delete_file, workspace, sandbox, path="hello.txt")
    assert not (workspace / "hello.txt").exists()
    error = refused(fs.delete_file, workspace, sandbox, path="tree")
    assert error.code is RefusalCode.INVALID_ARGUMENT and "recursive" in error.reason
    error = refused(fs.delete_file, workspace, sandbox, path="tree", recursive="true")
    assert error.code is RefusalCode.INVALID_ARGUMENT
    assert (workspace / "tree/sub/f.txt").exists()
    call(fs.delete_file, workspace, sandbox, path="tree", recursive=True)
    assert not (workspace / "tree").exists()
    assert workspace.is_dir()


def test_stat_reports_the_entry_itself(workspace: Path, sandbox: CountingSandbox) -> None:
    (workspace / "link").symlink_to("hello.txt")
    out = call(fs.stat, workspace, sandbox, path="hello.txt")
    assert out.structured is not None and out.structured["type"] == "file"
    assert out.structured["size"] == len("hello from the workspace\n")
    link = call(fs.stat, workspace, sandbox, path="link")
    assert link.structured is not None and link.structured["type"] == "symlink"


def test_symlinks_that_stay_inside_are_followed(workspace: Path, sandbox: CountingSandbox) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs/readme.md").write_text("inside\n")
    (workspace / "alias").symlink_to("docs")
    (workspace / "docs/up").symlink_to("../hello.txt")
    grant(workspace)
    assert call(fs.read_file, workspace, sandbox, path="alias/readme.md").content == "inside\n"
    assert call(fs.read_file, workspace, sandbox, path="docs/up").content.startswith("hello")


# -- the attack list ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "%2e%2e/secret.txt",
        "%252e%252e%252fsecret.txt",
        "..%2fsecret.txt",
        "..\\secret.txt",
        "\uff0e\uff0e/secret.txt",
        "\u2024\u2024/secret.txt",
        "..\uff0fsecret.txt",
        "/etc/passwd",
        "a\x00b",
        "x" * 5000,
        "~/.bashrc",
    ],
)
def test_malicious_paths_are_refused_before_any_process(
    workspace: Path, subprocess_sandbox: CountingSandbox, path: str
) -> None:
    for tool, extra in (
        (fs.read_file, {}),
        (fs.write_file, {"content": "pwned"}),
        (fs.delete_file, {}),
        (fs.stat, {}),
        (fs.list_directory, {}),
        (fs.edit_file, {"old_string": "a", "new_string": "b"}),
    ):
        error = refused(tool, workspace, subprocess_sandbox, path=path, **extra)
        assert error.code in (RefusalCode.PATH_NOT_REACHABLE, RefusalCode.INVALID_ARGUMENT)
    assert subprocess_sandbox.specs == []


def test_symlink_to_a_file_outside_is_refused(
    workspace: Path, outside_dir: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "rel").symlink_to(f"../{outside_dir.name}/secret.txt")
    (workspace / "abs").symlink_to(outside_dir / "secret.txt")
    (workspace / "passwd").symlink_to("/etc/passwd")
    for name in ("rel", "abs", "passwd"):
        error = refused(fs.read_file, workspace, sandbox, path=name)
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
        assert "symlink" in error.reason
    assert len(sandbox.specs) == 3  # refused inside the sandbox, by the runner


def test_symlinked_parent_directory_is_refused_for_reads_and_writes(
    workspace: Path, outside_dir: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "docs").symlink_to(f"../{outside_dir.name}")
    (workspace / "etc").symlink_to("/etc")
    error = refused(fs.read_file, workspace, sandbox, path="docs/secret.txt")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert refused(fs.read_file, workspace, sandbox, path="etc/passwd").code is (
        RefusalCode.PATH_NOT_REACHABLE
    )
    error = refused(fs.write_file, workspace, sandbox, path="docs/planted.txt", content="x")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert not (outside_dir / "planted.txt").exists()
    error = refused(fs.list_directory, workspace, sandbox, path="docs")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    error = refused(fs.delete_file, workspace, sandbox, path="docs/secret.txt")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert (outside_dir / "secret.txt").exists()


def test_symlink_chain_that_ends_outside_is_refused(
    workspace: Path, outside_dir: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "d1").mkdir()
    (workspace / "a").symlink_to("b")
    (workspace / "b").symlink_to("d1/c")
    (workspace / "d1/c").symlink_to(f"../../{outside_dir.name}/secret.txt")
    grant(workspace)
    error = refused(fs.read_file, workspace, sandbox, path="a")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE


def test_dangling_symlink_pointing_out_cannot_be_written_through(
    workspace: Path, outside_dir: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "out.txt").symlink_to(f"../{outside_dir.name}/created-by-agent.txt")
    (workspace / "abs.txt").symlink_to(outside_dir / "created-abs.txt")
    for name in ("out.txt", "abs.txt"):
        error = refused(fs.write_file, workspace, sandbox, path=name, content="escaped")
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
    assert sorted(p.name for p in outside_dir.iterdir()) == ["secret.txt"]


def test_symlink_loop_is_refused(workspace: Path, sandbox: CountingSandbox) -> None:
    (workspace / "loop1").symlink_to("loop2")
    (workspace / "loop2").symlink_to("loop1")
    (workspace / "self").symlink_to("self/x")
    for name in ("loop1", "self"):
        error = refused(fs.read_file, workspace, sandbox, path=name)
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
        assert "symlink" in error.reason


def test_delete_removes_a_link_never_its_target(
    workspace: Path, outside_dir: Path, sandbox: CountingSandbox
) -> None:
    (workspace / "link").symlink_to(outside_dir)
    call(fs.delete_file, workspace, sandbox, path="link", recursive=True)
    assert not (workspace / "link").is_symlink()
    assert (outside_dir / "secret.txt").read_text() == "TOP-SECRET-OUTSIDE\n"


def test_fifo_socket_and_device_files_are_refused(
    workspace: Path, sandbox: CountingSandbox
) -> None:
    os.mkfifo(workspace / "pipe")
    os.mknod(workspace / "null", 0o666 | 0o020000, os.makedev(1, 3))
    grant(workspace)
    for name in ("pipe", "null"):
        error = refused(fs.read_file, workspace, sandbox, path=name)
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
        error = refused(fs.write_file, workspace, sandbox, path=name, content="x")
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
        error = refused(fs.edit_file, workspace, sandbox, path=name, old_string="a", new_string="")
        assert error.code is RefusalCode.PATH_NOT_REACHABLE
    described = call(fs.stat, workspace, sandbox, path="pipe").structured
    assert described is not None and described["type"] == "fifo"


def test_hard_link_to_a_file_outside_is_not_read(
    workspace: Path, outside_dir: Path, sandbox: CountingSandbox
) -> None:
    os.link(outside_dir / "secret.txt", workspace / "innocent.txt")
    error = refused(fs.read_file, workspace, sandbox, path="innocent.txt")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE and "hard link" in error.reason
    # Writing replaces the name; the outside file keeps its content.
    call(fs.write_file, workspace, sandbox, path="innocent.txt", content="mine\n")
    assert (outside_dir / "secret.txt").read_text() == "TOP-SECRET-OUTSIDE\n"


def test_the_floor_holds_on_disk_and_for_scope_full(
    workspace: Path, subprocess_sandbox: CountingSandbox
) -> None:
    (workspace / ".ssh").mkdir()
    (workspace / ".ssh/id_rsa").write_text("-----BEGIN PRIVATE KEY-----\n")
    (workspace / ".ssh/config").write_text("Host *\n")
    (workspace / "notes").symlink_to(".ssh/id_rsa")
    (workspace / "keys").symlink_to(".ssh")
    grant(workspace)
    for scope in ("workspace_only", "full"):
        for path in (".ssh/id_rsa", "notes", "keys/config", "/etc/shadow", "/root/.bash_history"):
            error = refused(fs.read_file, workspace, subprocess_sandbox, path=path, scope=scope)
            assert error.code is RefusalCode.PATH_NOT_REACHABLE
            assert "always-denied" in error.reason or "outside the workspace" in error.reason
    # 'notes' and 'keys/config' look harmless: only the runner, on disk, sees the floor.
    assert len(subprocess_sandbox.specs) == 4


def test_scope_full_reads_outside_and_scope_none_reads_nothing(
    workspace: Path, outside_dir: Path, subprocess_sandbox: CountingSandbox
) -> None:
    secret = str(outside_dir / "secret.txt")
    error = refused(fs.read_file, workspace, subprocess_sandbox, path=secret)
    assert error.code is RefusalCode.PATH_NOT_REACHABLE
    # Full scope reaches absolute paths of the sandbox's own view (read-only
    # system directories); the host's other files are not in it at all.
    system_file = "/usr/lib/os-release"
    out = call(fs.read_file, workspace, subprocess_sandbox, path=system_file, scope="full")
    assert "ID=" in out.content
    unseen = failed(fs.read_file, workspace, subprocess_sandbox, path=secret, scope="full")
    assert "does not exist" in str(unseen)
    error = refused(fs.read_file, workspace, subprocess_sandbox, path="hello.txt", scope="none")
    assert error.code is RefusalCode.PATH_NOT_REACHABLE


def test_read_only_mode_refuses_every_write_tool(
    workspace: Path, subprocess_sandbox: CountingSandbox
) -> None:
    settings = {"read_only": True}
    for tool, extra in (
        (fs.write_file, {"content": "x"}),
        (fs.edit_file, {"old_string": "hello", "new_string": "bye"}),
        (fs.delete_file, {}),
    ):
        error = refused(
            tool, workspace, subprocess_sandbox, settings=settings, path="hello.txt", **extra
        )
        assert error.code is RefusalCode.PATH_NOT_REACHABLE and "read-only" in error.reason
    assert subprocess_sandbox.specs == []
    out = call(fs.read_file, workspace, subprocess_sandbox, settings=settings, path="hello.txt")
    assert out.content.startswith("hello")
    assert (workspace / "hello.txt").read_text() == "hello from the workspace\n"


@pytest.mark.parametrize("path", [".", "", "src/..", "/", "./"])
def test_the_workspace_root_is_never_deleted(
    workspace: Path, subprocess_sandbox: CountingSandbox, path: str
) -> None:
    error = refused(fs.delete_file, workspace, subprocess_sandbox, path=path, recursive=True)
    assert error.code in (RefusalCode.PATH_NOT_REACHABLE, RefusalCode.INVALID_ARGUMENT)
    assert (workspace / "hello.txt").exists()


def test_the_namespace_mount_is_read_only_for_read_tools(workspace: Path) -> None:
    """Even a runner that tried to write during a read could not: the mount says no."""
    backend = namespace_backend()
    spec = SandboxSpec(
        argv=("python3", "-I", "-S", "-c", "open('planted.txt', 'w').write('x')"),
        workspace=fs_read_mount(workspace),
    )
    result = backend.run(spec)
    assert result.exit_code != 0 and "Read-only file system" in result.stderr
    assert not (workspace / "planted.txt").exists()


def fs_read_mount(ws: Path) -> WorkspaceMount:
    return WorkspaceMount(ws, MountMode.READ_ONLY)


def test_wrong_setting_types_fail_closed(
    workspace: Path, subprocess_sandbox: CountingSandbox
) -> None:
    for settings in ({"read_only": "no"}, {"max_read_bytes": -1}, {"denied_paths": [3]}):
        with pytest.raises((ToolFailedError, ToolRefusedError)):
            call(fs.read_file, workspace, subprocess_sandbox, settings=settings, path="hello.txt")
    assert subprocess_sandbox.specs == []
