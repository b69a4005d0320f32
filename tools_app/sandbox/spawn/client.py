"""The worker's side of the spawn server (see ``spawn_server``).

One server per worker process and interpreter, started on first use and
started again when it died or the worker forked. Requests are serialised by
a lock, so threads of one worker may share it.
"""

from __future__ import annotations

import array
import contextlib
import marshal
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.paths import DEFAULT_SANDBOX_PATH

SERVER_SCRIPT = str(Path(__file__).parent / "inside" / "server.py")
HEADER = struct.Struct(">I")
# Variables that decide how an interpreter sets up its locale and streams; a
# warm child is only used when the call's values equal the server's.
LOCALE_NAMES = ("LC_ALL", "LC_CTYPE", "LANG")
REPLY_TIMEOUT_SECONDS = 60.0
# How long a server may take to kill its commands and exit once disconnected.
SHUTDOWN_SECONDS = 5.0
WARM_PREFIX = ("python3", "-I", "-S", "-c")


class SpawnError(SandboxError):
    """The spawn server could not confine or start the command.

    ``stage``: the confinement step that failed in the child (``network``, ``user``...),
    or empty when the server itself failed; the command did not start either way.
    """

    def __init__(self, reason: str, *, stage: str = "", errno: int = 0) -> None:
        super().__init__(reason)
        self.stage = stage
        self.errno = errno


@dataclass(frozen=True, slots=True)
class Spawned:
    """A started command: its pid (a child of the server) and whether it runs warm."""

    pid: int
    warm: bool


@dataclass(frozen=True, slots=True)
class ExecFailure:
    """The command could not be executed (``errno`` as execve reported it)."""

    errno: int
    message: str


def default_interpreter() -> str:
    """The ``python3`` a sandboxed command finds on the default PATH, else this one."""
    found = shutil.which("python3", path=DEFAULT_SANDBOX_PATH)
    return os.path.realpath(found) if found else os.path.realpath(sys.executable)


def locale_of(env: Mapping[str, str]) -> tuple[str | None, ...]:
    """The locale variables of ``env``, in a fixed order."""
    return tuple(env.get(name) for name in LOCALE_NAMES)


class SpawnServer:
    """A connection to one running spawn server; restarted when needed."""

    def __init__(self, interpreter: str, locale_env: Mapping[str, str]) -> None:
        self.interpreter = interpreter
        self.locale_env = dict(locale_env)
        self.locale = locale_of(self.locale_env)
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = 0

    # -- lifecycle -----------------------------------------------------------

    def _start(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # The server waits on its end: blocking whatever default socket timeout this
        # process has now (Celery sets one while a worker shuts down warm).
        theirs.setblocking(True)
        try:
            argv = [
                self.interpreter,
                "-I",
                "-S",
                SERVER_SCRIPT,
                str(theirs.fileno()),
                ",".join(self.locale_env),
            ]
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                env=self.locale_env,
                cwd="/",
                close_fds=True,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise SpawnError(f"cannot start the sandbox spawn server: {exc}") from exc
        finally:
            theirs.close()
        ours.settimeout(REPLY_TIMEOUT_SECONDS)
        self._sock = ours
        self._owner = os.getpid()
        try:
            hello, _ = self._receive()
        except SpawnError:
            self._discard()
            raise
        if "ready" not in hello:
            self._discard()
            raise SpawnError("the sandbox spawn server did not start")
        return ours

    def _connection(self) -> socket.socket:
        if self._sock is not None and self._owner != os.getpid():
            # Inherited across a fork: that server belongs to the parent.
            self._sock.close()
            self._sock, self._proc = None, None
        if self._sock is None:
            return self._start()
        return self._sock

    def _discard(self) -> None:
        """Drop the connection; the server then kills its commands and exits."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        proc, self._sock, self._proc = self._proc, None, None
        if proc is not None and self._owner == os.getpid():
            try:
                proc.wait(timeout=SHUTDOWN_SECONDS)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=SHUTDOWN_SECONDS)

    def close(self) -> None:
        """Stop the server; commands still running are killed by it."""
        with self._lock:
            self._discard()

    def after_fork_in_child(self) -> None:
        """Forget the parent's server without touching it."""
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock, self._proc = None, None
        self._lock = threading.Lock()

    # -- messages ------------------------------------------------------------

    def _receive(self) -> tuple[dict[str, Any], None]:
        assert self._sock is not None
        try:
            head = self._recv_exact(HEADER.size)
            (size,) = HEADER.unpack(head)
            # The peer is the server this worker started, as root-only as itself.
            message = marshal.loads(self._recv_exact(size))  # noqa: S302
        except (OSError, EOFError, ValueError) as exc:
            raise SpawnError(f"the sandbox spawn server stopped answering: {exc}") from exc
        if not isinstance(message, dict):
            raise SpawnError("the sandbox spawn server answered something unreadable")
        return message, None

    def _recv_exact(self, size: int) -> bytes:
        assert self._sock is not None
        data = bytearray()
        while len(data) < size:
            chunk = self._sock.recv(size - len(data))
            if not chunk:
                raise EOFError("end of file")
            data += chunk
        return bytes(data)

    def _exchange(self, request: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        with self._lock:
            body = marshal.dumps(request)
            payload = HEADER.pack(len(body)) + body
            ancillary = (
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
            )
            for attempt in range(2):
                sock = self._connection()
                try:
                    sent = sock.sendmsg([payload], ancillary)
                except OSError:
                    # A server that died between calls: start a new one once.
                    self._discard()
                    if attempt:
                        raise
                    continue
                try:
                    if sent < len(payload):
                        sock.sendall(payload[sent:])
                    reply, _ = self._receive()
                except (OSError, SpawnError):
                    self._discard()
                    raise
                return reply
        raise SpawnError("unreachable")  # pragma: no cover

    # -- requests ------------------------------------------------------------

    def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        fds: Sequence[int],
        stdin: bool,
        rlimits: Sequence[tuple[int, tuple[int, int]]],
        uid: int,
        gid: int,
        switch: bool,
        cgroup_procs: Sequence[str],
        warm: bool,
        private_root: Mapping[str, Any] | None = None,
        loopback: Mapping[str, Any] | None = None,
    ) -> Spawned | ExecFailure:
        """Start ``argv`` confined; ``fds`` are stdin (when ``stdin``), stdout, stderr, extras.

        ``loopback``: the plan of ``spawn_loopback`` (``socket``, ``port``, ``relay``); the
        command then starts in a network namespace of its own whose loopback has the
        egress relay listening on it."""
        request = {
            "op": "spawn",
            "argv": list(argv),
            "env": dict(env),
            "cwd": cwd,
            "stdin": stdin,
            "rlimits": [(which, soft, hard) for which, (soft, hard) in rlimits],
            "uid": uid,
            "gid": gid,
            "switch": switch,
            "cgroups": list(cgroup_procs),
            "warm": warm,
            "private_root": dict(private_root) if private_root else None,
            "loopback": dict(loopback) if loopback else None,
            "executable": (shutil.which("python3", path=env.get("PATH", "")) or "") if warm else "",
        }
        reply = self._exchange(request, fds)
        if "pid" in reply:
            return Spawned(int(reply["pid"]), bool(reply.get("warm")))
        stage = str(reply.get("stage", "exec"))
        if stage == "exec":
            return ExecFailure(int(reply.get("errno", 0)), str(reply.get("error", "")))
        raise SpawnError(
            f"the sandbox could not confine the command ({stage}): {reply.get('error', '')}",
            stage=stage,
            errno=int(reply.get("errno", 0) or 0),
        )

    def prepare(self, cgroup_procs: Sequence[str]) -> None:
        """Have the server fork a child that joins these cgroups now and waits for the
        next command spawned in them (the join's wait is paid between calls).

        One-way: no reply is awaited; a server that is gone is left for the next
        request to notice and restart.
        """
        body = marshal.dumps({"op": "prepare", "cgroups": list(cgroup_procs)})
        with self._lock:
            if self._sock is None or self._owner != os.getpid():
                return
            try:
                self._sock.sendall(HEADER.pack(len(body)) + body)
            except OSError:
                self._discard()

    def reap(self, pid: int) -> tuple[int, float]:
        """Collect a command that has exited: (wait status, CPU seconds used)."""
        reply = self._exchange({"op": "reap", "pid": pid})
        if "status" not in reply:
            raise SpawnError(f"the sandbox spawn server could not reap {pid}: {reply}")
        return int(reply["status"]), float(reply["cpu"])

    def serves_warm(self, argv: Sequence[str], env: Mapping[str, str]) -> bool:
        """True when ``argv`` is ``python3 -I -S -c SOURCE ...`` on this server's interpreter."""
        if len(argv) < 5 or tuple(argv[:4]) != WARM_PREFIX:
            return False
        if locale_of(env) != self.locale:
            return False
        found = shutil.which("python3", path=env.get("PATH", ""))
        return found is not None and os.path.realpath(found) == self.interpreter


_servers: dict[tuple[str, tuple[str | None, ...]], SpawnServer] = {}
_servers_lock = threading.Lock()


def spawn_server(locale_env: Mapping[str, str], interpreter: str | None = None) -> SpawnServer:
    """The spawn server of this process for ``locale_env`` (started on first request)."""
    interpreter = interpreter or default_interpreter()
    wanted = {name: locale_env[name] for name in LOCALE_NAMES if locale_env.get(name)}
    key = (interpreter, locale_of(wanted))
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _servers[key] = SpawnServer(interpreter, wanted)
        return server


def _after_fork_in_child() -> None:
    global _servers_lock
    _servers_lock = threading.Lock()
    for server in _servers.values():
        server.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
