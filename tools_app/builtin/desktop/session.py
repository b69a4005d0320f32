"""Desktop sessions: one standing sandbox per agent and workspace, reachable by every
worker process of the machine.

The worker process that starts a session holds it: the confined process tree
(bubblewrap, the in-sandbox host, Xvfb, the agent's programs) is its child (on the
docker backend, a container of its own, watched through its init's host pid), ended
by it when the session is idle past ``idle_seconds``, older than
``max_age_seconds``, its programs have ended, or ``keep`` says the agent may no
longer have one (switched off). Calls reach the session through its control
socket, in a directory of the machine (``runtime_dir``) named by a digest of
the agent and its workspace (path, device and inode), so a call taken by any
worker process of the machine reaches the same session without routing it to
its holder; a ``lease.json`` beside it names the holder, and a session whose
holder is gone is treated as gone. The socket is bound into that session's
sandbox only: another agent's sandbox cannot see it, and a worker looks up
only the session of the agent a call runs for.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from common.platform.private_state import traversable_dir
from tools_app.builtin.desktop.placement import placement_hold, placement_release
from tools_app.sandbox.backends.docker.backend import DockerSandbox
from tools_app.sandbox.backends.docker.standing import ContainerProcess
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.linux.identity import resolve_identity
from tools_app.sandbox.protocol import SandboxSpec
from tools_app.sandbox.readiness import wait_readable
from tools_app.sandbox.runner import StartedProcess
from tools_app.sandbox.spawn.client import ExecFailure

log = logging.getLogger("synthorg.desktop")

# A session stands in a long-lived bubblewrap process tree or in a container of its own.
SessionBackend = NamespaceSandbox | DockerSandbox

CONTROL_INSIDE: Final = "/run/synthorg-desktop"
SOCKET_NAME: Final = "control.sock"
LEASE_NAME: Final = "lease.json"
ANSWER_MAX_BYTES: Final = 1024 * 1024
NOT_RUNNING: Final = "desktop_app_not_running"
CANCELLED: Final = "cancelled"
# How often a call that waits for its answer looks whether it was cancelled.
CANCEL_CHECK_SECONDS: Final = 0.5
# Room beyond the host's own idle limit before the holder ends a session itself.
IDLE_MARGIN_SECONDS: Final = 5.0


class DesktopSessionError(Exception):
    """A session could not be reached or started; ``code`` for the agent."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class SessionPlace:
    """Where one agent's session lives on this machine."""

    key: str
    directory: Path

    @property
    def control_dir(self) -> Path:
        return self.directory / "control"

    @property
    def socket_path(self) -> Path:
        return self.control_dir / SOCKET_NAME

    @property
    def lease_path(self) -> Path:
        return self.directory / LEASE_NAME


def runtime_root(configured: str | None) -> Path:
    """The machine's directory of sessions: made private to this user (others may only
    pass through it, to reach a session's bound directory)."""
    if configured is not None:
        root = Path(configured)
    elif os.geteuid() == 0:
        root = Path("/run/synthorg-desktop")
    else:
        root = Path(f"/tmp/synthorg-desktop-{os.geteuid()}")  # noqa: S108 - checked below
    # Each directory made here is 0711 whatever the umask (the launcher's is 077), so
    # the sandbox's user can pass through to a session's directory.
    traversable_dir(root, parents=True)
    closed = [p for p in root.parents if not p.stat().st_mode & stat.S_IXOTH]
    if closed:
        raise DesktopSessionError(
            "DESKTOP_UNAVAILABLE",
            f"{closed[0]} cannot be passed through by other users, so the sandbox's user "
            f"cannot reach the sessions in {root}; give it o+x or set desktop.runtime_dir",
        )
    found = root.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
        raise DesktopSessionError(
            "DESKTOP_UNAVAILABLE", f"{root} is not a directory of the console's own user"
        )
    os.chmod(root, 0o711)  # noqa: S103 - sandboxes' bwrap passes through to its own bind
    return root


def session_place(root: Path, agent_id: str, workspace: Path) -> SessionPlace:
    """The place of ``agent_id``'s session in ``workspace``: a workspace removed and
    made again (new inode) gets a new one."""
    real = os.path.realpath(workspace)
    found = os.stat(real)
    digest = hashlib.sha256(
        f"{agent_id}\0{real}\0{found.st_dev}\0{found.st_ino}".encode()
    ).hexdigest()[:32]
    return SessionPlace(digest, root / digest)


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (a reused pid has another)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _lease(place: SessionPlace) -> dict[str, Any] | None:
    try:
        lease: dict[str, Any] = json.loads(place.lease_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return lease


def live(place: SessionPlace) -> bool:
    """True when the session stands: its holder process runs and its socket is there."""
    lease = _lease(place)
    if lease is None or not place.socket_path.exists():
        return False
    holder = int(lease.get("holder", 0))
    return holder > 0 and _start_time(holder) == lease.get("holder_started")


def ask(
    place: SessionPlace,
    request: Mapping[str, Any],
    *,
    timeout: float,
    cancelled: Callable[[], bool] = lambda: False,
    touch: bool = True,
) -> dict[str, Any]:
    """Send one request to the session; its answer. No session: ``desktop_app_not_running``.

    While it waits, ``cancelled`` is asked now and then: a cancelled call stops the
    whole session at once (what it was doing may be half done) and raises ``cancelled``.
    Without ``touch`` the request is no use of the session (a person watching it): its
    idle time goes on.
    """
    if not live(place):
        raise DesktopSessionError(NOT_RUNNING, _not_running())
    if touch:
        with contextlib.suppress(OSError):
            os.utime(place.lease_path)  # the session was used: its idle time starts again
    line = (json.dumps(dict(request), separators=(",", ":")) + "\n").encode()
    deadline = time.monotonic() + timeout
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(str(place.socket_path))
            conn.sendall(line)
            data = b""
            while b"\n" not in data and len(data) <= ANSWER_MAX_BYTES:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                conn.settimeout(min(left, CANCEL_CHECK_SECONDS))
                try:
                    chunk = conn.recv(65536)
                except TimeoutError:
                    if cancelled():
                        stop_session(place)
                        raise DesktopSessionError(
                            CANCELLED, "the call was cancelled; its desktop session was ended"
                        ) from None
                    continue
                if not chunk:
                    break
                data += chunk
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        raise DesktopSessionError(NOT_RUNNING, _not_running()) from exc
    except TimeoutError as exc:
        raise DesktopSessionError(
            "TIMED_OUT", f"the desktop did not answer within {timeout:g}s"
        ) from exc
    try:
        answer: dict[str, Any] = json.loads(data.split(b"\n", 1)[0])
    except ValueError as exc:
        # It ended while answering (its programs ended, or it was ended).
        raise DesktopSessionError(NOT_RUNNING, _not_running()) from exc
    return answer


def _not_running() -> str:
    return (
        "no desktop program is running for this agent (none was launched, it ended, or the "
        "session was idle too long); start one with desktop_launch"
    )


@dataclass(frozen=True, slots=True)
class SessionLimits:
    """How long a session stands and how often its holder looks at it."""

    idle_seconds: float
    max_age_seconds: float
    check_seconds: float
    start_seconds: float
    kill_grace_seconds: float = 1.0


@contextlib.contextmanager
def start_lock(place: SessionPlace) -> Iterator[None]:
    """One start of a session at a time on this machine, whichever process starts it."""
    lock_path = _lock_path(place)
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            # The file may have been removed by a session's end while this waited for it.
            current = os.stat(lock_path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)
    try:
        yield
    finally:
        os.close(fd)


def _lock_path(place: SessionPlace) -> Path:
    return place.directory.with_name(place.key + ".lock")


def _remove_lock(place: SessionPlace) -> None:
    """Remove the start lock when no start holds or waits for it (they make it again)."""
    try:
        fd = os.open(_lock_path(place), os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.unlink(_lock_path(place))
    except OSError:
        pass  # a start holds it: that start's session keeps it
    finally:
        os.close(fd)


def _control_owner(backend: SessionBackend) -> tuple[int, int] | None:
    """Who must own the control directory: the user the session's programs run as, when
    that is not this worker's own."""
    if isinstance(backend, DockerSandbox):
        uid, gid = backend.standing_user()
        return None if uid == os.geteuid() else (uid, gid)
    identity = resolve_identity(backend.run_as_user, backend=backend.name)
    return (identity.uid, identity.gid) if identity.switch else None


def start_session(
    place: SessionPlace,
    backend: SessionBackend,
    spec: SandboxSpec,
    *,
    limits: SessionLimits,
    keep: Callable[[], bool],
    describe: Mapping[str, str],
) -> dict[str, Any]:
    """Start the session's sandbox (``spec``: the host program) and wait for its first
    answer; this process holds the session from then on."""
    _remove(place)
    owner = _control_owner(backend)
    # The sandbox's user, to whom the control directory is given, must pass through the
    # session's directory to reach it.
    traversable_dir(place.directory, exist_ok=False)
    place.control_dir.mkdir(mode=0o700)
    if owner is not None:
        os.chown(place.control_dir, *owner)
    started, release = backend.start(spec, binds=((str(place.control_dir), CONTROL_INSIDE),))
    if isinstance(started, ExecFailure):
        release()
        _remove(place)
        raise DesktopSessionError("DESKTOP_UNAVAILABLE", f"the sandbox did not start: {started}")
    held = HeldSession(place, started, release, limits, keep)
    first = held.first_answer(limits.start_seconds)
    if not first.get("ok"):
        held.end()
        code = str(first.get("code") or "LAUNCH_FAILED")
        raise DesktopSessionError(code, str(first.get("message") or "the desktop did not start"))
    lease = {
        "holder": os.getpid(),
        "holder_started": _start_time(os.getpid()),
        "started": time.time(),
        "sandbox": started.pid,
        "sandbox_started": _start_time(started.pid),
        **describe,
    }
    temporary = place.directory / (LEASE_NAME + ".new")
    temporary.write_text(json.dumps(lease), encoding="utf-8")
    os.replace(temporary, place.lease_path)
    # The agent's desktop calls are sent to this machine from now (placement.py).
    held.agent_id = describe.get("agent_id") or None
    if held.agent_id is not None:
        placement_hold(held.agent_id)
    held.watch()
    return first


class HeldSession:
    """A session this process started: it watches it and ends it."""

    def __init__(
        self,
        place: SessionPlace,
        process: StartedProcess | ContainerProcess,
        release: Callable[[], None],
        limits: SessionLimits,
        keep: Callable[[], bool],
    ) -> None:
        self.place = place
        self.process = process
        self.release = release
        self.limits = limits
        self.keep = keep
        self.started = time.monotonic()
        self.agent_id: str | None = None
        self._ended = False
        self._done = False
        self._lock = threading.Lock()
        self._stdout = b""

    def first_answer(self, seconds: float) -> dict[str, Any]:
        """The host's first line: whether the display and the first program started."""
        deadline = time.monotonic() + seconds
        fd = self.process.stdout_fd
        while b"\n" not in self._stdout and time.monotonic() < deadline:
            if not wait_readable(fd, max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            self._stdout += chunk
        line = self._stdout.split(b"\n", 1)[0]
        try:
            answer: dict[str, Any] = json.loads(line)
        except ValueError:
            stderr = _drain(self.process.stderr_fd)
            return {
                "ok": False,
                "code": "LAUNCH_FAILED",
                "message": "the desktop did not start within "
                f"{seconds:g}s: {stderr.decode(errors='replace')[-400:]}",
            }
        return answer

    def watch(self) -> None:
        threading.Thread(
            target=self._watch, name=f"desktop-{self.place.key[:8]}", daemon=True
        ).start()

    def _watch(self) -> None:
        try:
            while not self._ended:
                if wait_readable(self.process.pidfd, self.limits.check_seconds):
                    log.info("desktop session %s ended by itself", self.place.key[:8])
                    break
                for fd in (self.process.stdout_fd, self.process.stderr_fd):
                    _drain(fd)  # its pipes never fill
                why = self._spent()
                if why:
                    log.info("desktop session %s ends: %s", self.place.key[:8], why)
                    break
                if self.agent_id is not None:
                    placement_hold(self.agent_id)  # still here: renewed before it lapses
        finally:
            self.end()

    def _spent(self) -> str:
        now = time.monotonic()
        if now - self.started >= self.limits.max_age_seconds:
            return "max_age_seconds"
        try:
            idle = time.time() - self.place.lease_path.stat().st_mtime
        except OSError:
            return "its lease is gone"
        if idle > self.limits.idle_seconds + IDLE_MARGIN_SECONDS:
            return "idle_seconds"
        try:
            wanted = self.keep()
        except Exception:  # unknown is no reason to end it: checked again next time
            log.warning("desktop session %s: could not check its agent", self.place.key[:8])
            return ""
        return "" if wanted else "the agent may no longer use it"

    def end(self) -> None:
        """End the process tree, give back what it held, remove its place."""
        with self._lock:
            self._ended = True
            if self._done:
                return
            self._done = True
            if self.agent_id is not None:
                placement_release(self.agent_id)
            with contextlib.suppress(OSError):
                self.place.lease_path.unlink()
            try:
                self.process.end(kill_grace_seconds=self.limits.kill_grace_seconds)
            finally:
                self.release()
                _remove(self.place)
                _remove_lock(self.place)


def _drain(fd: int, limit: int = 64 * 1024) -> bytes:
    data = b""
    with contextlib.suppress(OSError):
        os.set_blocking(fd, False)
        while len(data) < limit:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    return data


def _remove(place: SessionPlace) -> None:
    shutil.rmtree(place.directory, ignore_errors=True)


def stop_session(place: SessionPlace) -> None:
    """Kill the session's sandbox at once, from any worker process of the machine; its
    holder sees it end and removes what is left."""
    lease = _lease(place)
    if lease is None:
        return
    pid = int(lease.get("sandbox", 0))
    if pid > 0 and _start_time(pid) == lease.get("sandbox_started"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
