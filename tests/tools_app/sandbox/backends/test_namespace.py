"""NamespaceSandbox (bubblewrap) against real namespaces."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.tools_app.sandbox.attacks import AttackSuite
from tests.tools_app.sandbox.conftest import require
from tools_app.sandbox.backends.namespace import USER_NAMESPACE_NPROC_HEADROOM, NamespaceSandbox
from tools_app.sandbox.backends.namespace_probe import probe_namespace
from tools_app.sandbox.errors import SandboxUnavailableError
from tools_app.sandbox.protocol import NetworkPolicy, SandboxSpec, WorkspaceMount

NETWORK_PROBE = (
    "import socket\n"
    "for host in ('1.1.1.1', '8.8.8.8', '10.0.0.1'):\n"
    "    try:\n"
    "        socket.create_connection((host, 53), timeout=2)\n"
    "        print('REACHED', host)\n"
    "    except OSError as exc:\n"
    "        print('blocked', host, exc.errno)\n"
)


def namespace_backend() -> NamespaceSandbox:
    backend = NamespaceSandbox()
    require(backend.bwrap_path is not None, "bubblewrap (bwrap) is not installed")
    ok, reason = probe_namespace(backend)
    require(ok, f"namespaces cannot be created here: {reason}")
    return backend


class TestNamespaceSandbox(AttackSuite):
    def make_backend(self) -> NamespaceSandbox:
        return namespace_backend()

    def test_network_is_unreachable(self, backend, workspace):
        result = self.run(backend, workspace, "python3", "-c", NETWORK_PROBE)
        assert "REACHED" not in result.stdout
        assert result.stdout.count("blocked") == 3
        interfaces = self.run(backend, workspace, "cat", "/proc/net/dev")
        names = [line.split(":")[0].strip() for line in interfaces.stdout.splitlines()[2:]]
        assert names == ["lo"]

    def test_worker_processes_are_invisible(self, backend, workspace):
        result = self.run(backend, workspace, "sh", "-c", "ls /proc | grep -c '^[0-9]'")
        # bwrap's pid 1, the shell, ls and grep: nothing of the host.
        assert int(result.stdout) <= 5
        killed = self.run(backend, workspace, "kill", "-0", str(os.getpid()))
        assert killed.exit_code != 0 or os.getpid() <= 5

    def test_host_files_outside_the_binds_are_hidden(self, backend, workspace):
        result = self.run(
            backend, workspace, "sh", "-c", "ls /root /home /var /etc/shadow 2>&1; echo end"
        )
        assert "No such file" in result.stdout
        assert result.stdout.strip().endswith("end")

    def test_system_directories_and_root_are_read_only(self, backend, workspace):
        script = "touch /usr/pwned; touch /pwned; touch /etc/pwned; touch /tmp/ok && echo tmp-ok"
        result = self.run(backend, workspace, "sh", "-c", script)
        assert result.stdout == "tmp-ok\n"
        assert result.stderr.count("Read-only file system") == 3
        assert not os.path.exists("/usr/pwned")

    def test_dev_holds_no_memory_beyond_the_tmpfs_size(self, backend, workspace):
        # The attack: bubblewrap's /dev is a tmpfs of half the host's memory that no rlimit
        # counts; many files under the per-file size limit would fill it. Shared memory
        # gets a tmpfs of the /tmp size, and nothing else in /dev can be created.
        fill = (
            "i=0; while [ $i -lt 8 ]; do head -c 33554432 /dev/zero > /dev/shm/f$i || break;"
            " i=$((i+1)); done; echo written $i;"
            " echo x > /dev/pwned || echo dev-refused; df -k /dev/shm | tail -1"
        )
        result = self.run(backend, workspace, "sh", "-c", fill)
        lines = result.stdout.split("\n")
        assert int(lines[0].split()[1]) < 8, result.stdout  # 256 MiB never fits
        assert lines[1] == "dev-refused" and "Read-only file system" in result.stderr
        assert int(lines[2].split()[1]) == backend.tmpfs_size_bytes // 1024, result.stdout
        # The control: shared memory still works (a POSIX semaphore, a small segment), and
        # writing to a device node still does.
        control = (
            "import multiprocessing as mp, multiprocessing.shared_memory as sm\n"
            "lock = mp.Lock(); segment = sm.SharedMemory(create=True, size=1 << 20)\n"
            "segment.buf[:2] = b'ok'; print(bytes(segment.buf[:2]).decode())\n"
            "segment.close(); segment.unlink(); open('/dev/null', 'w').write('x')\n"
        )
        assert self.run(backend, workspace, "python3", "-c", control).stdout == "ok\n"

    def test_no_pseudo_terminal_can_be_opened(self, backend, workspace):
        # The attack: every pseudo-terminal holds kernel memory no ceiling of the sandbox
        # counts, and all sandboxes share the host's few thousand (kernel.pty.max): one
        # call or server opening them all would leave none to the others.
        attack = (
            "import os\n"
            "for path in ('/dev/ptmx', '/dev/pts/ptmx', '/proc/self/root/dev/pts/ptmx'):\n"
            "    try:\n"
            "        os.close(os.open(path, os.O_RDWR | os.O_NOCTTY)); print('opened', path)\n"
            "    except OSError as exc:\n"
            "        print('refused', path, exc.strerror)\n"
            "try:\n"
            "    os.openpty(); print('openpty')\n"
            "except OSError:\n"
            "    print('no openpty')\n"
            "try:\n"
            "    open('/dev/pts/planted', 'w'); print('planted')\n"
            "except OSError as exc:\n"
            "    print('not planted', exc.strerror)\n"
            "print(sorted(os.listdir('/dev/pts')))\n"
        )
        lines = self.run(backend, workspace, "python3", "-c", attack).stdout.splitlines()
        assert [line.split(" ")[0] for line in lines[:3]] == ["refused"] * 3, lines
        assert lines[3:] == ["no openpty", "not planted Read-only file system", "[]"], lines
        # The controls: pipes, which every tool's input and output go through, still work;
        # a command that asks for terminals (the desktop's xterm) gets them.
        control = "import os\nr, w = os.pipe(); os.write(w, b'ok'); print(os.read(r, 2).decode())"
        assert self.run(backend, workspace, "python3", "-c", control).stdout == "ok\n"
        asked = self.run(backend, workspace, "python3", "-c", attack, terminals=True)
        assert asked.stdout.splitlines()[:4] == [
            "opened /dev/ptmx", "opened /dev/pts/ptmx", "opened /proc/self/root/dev/pts/ptmx",
            "openpty",
        ], asked.stdout  # fmt: skip

    def test_tmp_is_private_per_call(self, backend, workspace):
        self.run(backend, workspace, "sh", "-c", "echo one > /tmp/left-behind")
        second = self.run(backend, workspace, "ls", "/tmp")
        assert "left-behind" not in second.stdout

    def test_sandbox_runs_in_new_namespaces(self, backend, workspace):
        script = "readlink /proc/self/ns/user /proc/self/ns/pid /proc/self/ns/net /proc/self/ns/mnt"
        inside = self.run(backend, workspace, "sh", "-c", script).stdout.split()
        outside = [os.readlink(f"/proc/self/ns/{kind}") for kind in ("user", "pid", "net", "mnt")]
        assert len(inside) == 4
        assert all(a != b for a, b in zip(inside, outside, strict=True))
        hostname = self.run(backend, workspace, "cat", "/proc/sys/kernel/hostname")
        assert hostname.stdout.strip() == "synthorg-sandbox"

    def test_the_host_network_is_never_shared(self, backend, workspace):
        with pytest.raises(SandboxUnavailableError, match="egress proxy"):
            backend.bwrap_argv(
                SandboxSpec(
                    argv=("true",),
                    workspace=WorkspaceMount(workspace),
                    network=NetworkPolicy.BRIDGE,
                ),
                workspace,
                "/workspace",
            )
        default = backend.bwrap_argv(
            SandboxSpec(argv=("true",), workspace=WorkspaceMount(workspace)),
            workspace,
            "/workspace",
        )
        for flag in ("--unshare-net", "--die-with-parent", "--new-session", "--unshare-user"):
            assert flag in default
        assert default[default.index(str(workspace)) - 1] == "--ro-bind"
        assert "/run/synthorg-egress" not in default
        proxied = backend.bwrap_argv(
            SandboxSpec(
                argv=("true",),
                workspace=WorkspaceMount(workspace),
                network=NetworkPolicy.PROXY,
                egress_dir=workspace,
            ),
            workspace,
            "/workspace",
        )
        assert "--unshare-net" in proxied
        assert proxied[proxied.index("/run/synthorg-egress") - 2] == "--ro-bind"
        assert proxied[-8:] == [
            "/usr/bin/python3",
            "-I",
            "-S",
            "/run/synthorg-egress/forward.py",
            "/run/synthorg-egress/proxy.sock",
            "3128",
            "--",
            "true",
        ]


def test_probe_really_creates_namespaces():
    backend = namespace_backend()
    report = backend.probe()
    assert report.ok, report.reason
    assert report.details["bwrap"] == shutil.which("bwrap")


def test_missing_bubblewrap_is_reported_and_refused(workspace):
    backend = NamespaceSandbox(bwrap_path="/nonexistent/bwrap")
    report = backend.probe()
    assert not report.ok
    spec = SandboxSpec(argv=("true",), workspace=WorkspaceMount(workspace))
    result_or_error: object
    try:
        result_or_error = backend.run(spec)
    except SandboxUnavailableError as exc:
        result_or_error = exc
    # Either refused outright or the call failed; it never ran unconfined.
    if not isinstance(result_or_error, SandboxUnavailableError):
        assert result_or_error.exit_code != 0


@pytest.mark.parametrize("value", ["0"])
def test_probe_explains_disabled_user_namespaces(value, tmp_path):
    # The probe reads the sysctl; disabling it machine-wide is not a test's
    # business, so check the wording of the refusal path through a missing bwrap.
    backend = NamespaceSandbox(bwrap_path=None)
    backend.bwrap_path = None
    ok, reason = probe_namespace(backend)
    assert not ok and "bubblewrap" in reason


class TestNamespaceSandboxWithoutCgroup(AttackSuite):
    """Machines without a writable cgroup: rlimits and the pid namespace still hold."""

    # Without pids.max the ceiling is RLIMIT_NPROC, which carries headroom for
    # user namespaces the kernel is still releasing.
    process_ceiling_slack = 4 + USER_NAMESPACE_NPROC_HEADROOM

    def make_backend(self) -> NamespaceSandbox:
        namespace_backend()
        return NamespaceSandbox(use_cgroup=False)

    # Without a group nothing else counts what /dev holds.
    test_dev_holds_no_memory_beyond_the_tmpfs_size = (
        TestNamespaceSandbox.test_dev_holds_no_memory_beyond_the_tmpfs_size
    )

    def test_probe_says_cgroups_are_off(self, backend):
        assert "switched off" in str(backend.probe().details["cgroup"])
