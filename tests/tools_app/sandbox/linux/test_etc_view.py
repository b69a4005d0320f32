"""The namespace sandbox's /etc copy: current with the host, private, never pulled from a call."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from common.testing import require
from tests.tools_app.sandbox.backends.test_namespace import namespace_backend
from tools_app.sandbox.linux.etc_view import COPY_MAX_TREE_ENTRIES, EtcView
from tools_app.sandbox.protocol import SandboxSpec, WorkspaceMount


@pytest.fixture
def host_etc(tmp_path: Path) -> Path:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("alice:x:1000:1000::/home/alice:/bin/sh\n")
    (etc / "private.conf").write_text("only root\n")
    (etc / "private.conf").chmod(0o600)
    (etc / "python3.11").mkdir()
    (etc / "python3.11" / "sitecustomize.py").write_text("# site\n")
    (etc / "localtime").symlink_to(etc / "passwd")
    big = etc / "ssl"
    big.mkdir()
    for index in range(COPY_MAX_TREE_ENTRIES + 1):
        (big / f"cert{index}.pem").write_text("cert\n")
    return etc


ENTRIES = ("passwd", "private.conf", "python3.11", "localtime", "ssl", "missing")


@pytest.fixture
def view(host_etc: Path, tmp_path: Path):
    base = tmp_path / "copies"
    base.mkdir()
    built = EtcView(ENTRIES, root=str(host_etc), bases=(str(base),))
    yield built
    built.remove_all()


def test_small_entries_are_copied_and_large_trees_bound(view, host_etc):
    with view.lease() as layout:
        copy = Path(layout.copy_dir)
        assert (copy / "passwd").read_text() == (host_etc / "passwd").read_text()
        assert (copy / "python3.11" / "sitecustomize.py").read_text() == "# site\n"
        # A symlinked entry shows what it names, as a bind of it did.
        assert not (copy / "localtime").is_symlink()
        assert (copy / "localtime").read_text() == (host_etc / "passwd").read_text()
        assert layout.binds == (f"{host_etc}/ssl",)
        # The bound tree gets an empty mount point; a missing entry gets nothing.
        assert (copy / "ssl").is_dir() and not any((copy / "ssl").iterdir())
        assert not (copy / "missing").exists()


def test_modes_and_owners_are_kept(view, host_etc):
    with view.lease() as layout:
        copied = os.stat(Path(layout.copy_dir) / "private.conf")
        original = os.stat(host_etc / "private.conf")
    assert copied.st_mode & 0o7777 == 0o600
    assert (copied.st_uid, copied.st_gid) == (original.st_uid, original.st_gid)


def test_a_host_change_is_seen_by_the_next_call(view, host_etc):
    with view.lease() as first:
        pass
    (host_etc / "passwd").write_text("bob:x:1001:1001::/home/bob:/bin/sh\n")
    (host_etc / "python3.11" / "sitecustomize.py").write_text("# changed\n")
    with view.lease() as second:
        assert second.copy_dir != first.copy_dir
        assert Path(second.copy_dir, "passwd").read_text().startswith("bob:")
        assert Path(second.copy_dir, "python3.11", "sitecustomize.py").read_text() == "# changed\n"
    # The superseded copy went once no call used it.
    assert not Path(first.copy_dir).exists()


def test_an_entry_that_appears_is_seen_by_the_next_call(view, host_etc):
    with view.lease() as first:
        assert not Path(first.copy_dir, "missing").exists()
    (host_etc / "missing").write_text("now here\n")
    with view.lease() as second:
        assert Path(second.copy_dir, "missing").read_text() == "now here\n"


def test_a_copy_in_use_is_not_removed_when_a_new_one_is_built(view, host_etc):
    with view.lease() as running:
        (host_etc / "passwd").write_text("carol:x:1002:1002::/home/carol:/bin/sh\n")
        with view.lease() as next_call:
            assert next_call.copy_dir != running.copy_dir
        assert Path(running.copy_dir, "passwd").read_text().startswith("alice:")
    assert not Path(running.copy_dir).exists()


def test_an_unchanged_host_reuses_the_copy(view):
    with view.lease() as first:
        pass
    with view.lease() as second:
        assert second.copy_dir == first.copy_dir


def test_a_file_with_extended_attributes_is_bound_not_copied(view, host_etc):
    try:
        os.setxattr(host_etc / "passwd", "user.synthorg", b"acl-like")
    except OSError as exc:
        require(False, f"a filesystem that keeps user xattrs for the test's /etc ({exc.strerror})")
    with view.lease() as layout:
        assert f"{host_etc}/passwd" in layout.binds
        assert Path(layout.copy_dir, "passwd").stat().st_size == 0


def test_a_forked_worker_makes_its_own_copy_and_leaves_the_parents(view, host_etc):
    with view.lease() as parent:
        pass
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a prefork worker child: use the view, then exit as a process does
        status = 1
        try:
            with view.lease() as child:
                os.write(write, child.copy_dir.encode())
            view.remove_all()
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    child_dir = os.read(read, 4096).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert child_dir and child_dir != parent.copy_dir
    assert not Path(child_dir).exists()
    assert Path(parent.copy_dir, "passwd").exists()
    with view.lease() as again:
        assert again.copy_dir == parent.copy_dir


def test_an_unsafe_base_falls_back_to_binding_every_entry(host_etc, tmp_path):
    base = tmp_path / "open"
    base.mkdir()
    base.chmod(0o777)  # writable by anyone, not sticky: a copy there could be swapped
    view = EtcView(ENTRIES, root=str(host_etc), bases=(str(base),))
    with view.lease() as layout:
        assert layout.copy_dir is None
        assert layout.binds == tuple(f"{host_etc}/{name}" for name in ENTRIES)
    assert not any(base.iterdir())


def test_inside_the_namespace_etc_matches_the_host_and_stays_read_only(workspace):
    backend = namespace_backend()
    script = "cat /etc/passwd; ls /etc/shadow 2>&1; touch /etc/pwned 2>&1; echo end"
    spec = SandboxSpec(argv=("sh", "-c", script), workspace=WorkspaceMount(workspace))
    result = backend.run(spec)
    with open("/etc/passwd", encoding="utf-8") as handle:
        assert result.stdout.startswith(handle.read())
    assert "No such file" in result.stdout
    assert "Read-only file system" in result.stdout
    assert result.stdout.rstrip().endswith("end")
