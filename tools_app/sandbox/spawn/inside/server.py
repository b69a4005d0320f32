"""The spawn server: a small process that starts each confined command for a worker.

Forking a large worker process (with code to run between fork and exec, which
rules out the vfork fast path) copies its page tables on every call; forking
this small process instead is cheap. The worker starts it with
``python3 -I -S spawn_server.py FD KEYS`` (a clean environment, only the standard
library) and talks to it over one end of a socketpair (``FD``); nothing is
reachable through the filesystem.

Requests and replies are length-prefixed ``marshal`` data (only plain
strings, numbers, lists and dicts; the peer is the worker that started this
process). A ``spawn`` request carries the call's pipe ends as SCM_RIGHTS; the
child joins the call's cgroups, moves the pipes to 0/1/2 (and extra fds to
3, 4, ...), closes everything else, changes directory, sets rlimits, starts a
new session, drops to the sandbox user and runs the command. The reply is its
pid; the worker supervises it through a pidfd and kills its process group,
then sends ``reap``, so the pid (and group id) stays reserved until every
straggler is dead. The reply to ``reap`` is the wait status and CPU time.

Warm interpreter: for ``python3 -I -S -c SOURCE ARGS`` on this interpreter the
child skips exec and, after the same confinement steps, runs the compiled
SOURCE itself as a fresh interpreter would (``spawn_warm``).

Standby: after each call the worker names, in a one-way ``prepare``, the
pooled cgroups its next call will get; when no request follows within a few
milliseconds, a child forked then joins them and waits, so that call skips
the join, which waits for an RCU grace period when no join happened just
before (see ``Server.prepare``).

It is a child subreaper and reaps whatever exited process trees leave behind.
When the worker goes away (end of file on the socket) every command still
running is killed and reaped, and this process exits. It is never dumpable,
so processes of the same user cannot attach to it.
"""

import contextlib
import fcntl
import marshal
import os
import resource
import select
import signal
import socket
import struct
import sys

# Modules commands run here commonly import; loaded once, shared by every warm child.
PRELOAD = ("json", "codecs", "contextlib", "errno", "stat", "fnmatch", "typing")
HEADER = struct.Struct(">I")
MAX_FDS = 8
HIGH_FD = 64
CODE_CACHE_SIZE = 32
PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36
STANDBY_ACK = b"k"
STANDBY_ACK_SECONDS = 10.0
# A join soon after another is cheap (the kernel's grace-period machinery is
# still active); the standby is forked only when no request came this long
# after the worker named the next call's cgroups.
STANDBY_DELAY_SECONDS = 0.004


def _prctl(*args):
    """``prctl(2)``; False when it failed or ctypes is missing."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        values = [ctypes.c_ulong(a) if isinstance(a, int) else ctypes.c_char_p(a) for a in args[1:]]
        values += [ctypes.c_ulong(0)] * (4 - len(values))
        return prctl(ctypes.c_int(args[0]), *values) == 0
    except (ImportError, OSError, AttributeError):
        return False


def _prctl_dumpable(value):
    _prctl(PR_SET_DUMPABLE, value)


def _present_as(argv):
    """Name this process after the command, as an exec would (``ps``, /proc/PID/comm)."""
    _prctl(PR_SET_NAME, os.fsencode(os.path.basename(argv[0]))[:15])


def _recv_exact(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return bytes(data)


def _recv_message(sock):
    fds: list[int] = []
    head = b""
    while len(head) < HEADER.size:
        data, ancdata, _flags, _addr = sock.recvmsg(
            HEADER.size - len(head), socket.CMSG_SPACE(MAX_FDS * 4)
        )
        if not data:
            for fd in fds:
                os.close(fd)
            raise EOFError
        head += data
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                fds.extend(struct.unpack(f"{usable // 4}i", payload[:usable]))
    (size,) = HEADER.unpack(head)
    # The only peer is the worker that started this process.
    return marshal.loads(_recv_exact(sock, size)), fds  # noqa: S302


def _send_message(sock, message):
    body = marshal.dumps(message)
    sock.sendall(HEADER.pack(len(body)) + body)


class ConfinementError(Exception):
    """A confinement step failed in the child; the command was not started."""

    def __init__(self, stage, error):
        super().__init__(error.strerror or str(error))
        self.stage = stage
        self.errno = error.errno
        self.strerror = error.strerror


class Server:
    """The request loop and the state shared by every child."""

    def __init__(self, sock, startup_keys):
        self.sock = sock
        self.running = set()
        self.standby = None
        self.code_cache = {}
        self.warm = _load_sibling("warm").WarmInterpreter(startup_keys)
        self.confine = _load_sibling("confine")
        self.loopback = _load_sibling("loopback")
        self.relays = {}

    def serve(self):
        _send_message(self.sock, {"ready": os.getpid(), "executable": sys.executable})
        pending = None  # cgroups named by the last ``prepare``, standby not forked yet
        while True:
            if pending is not None and not _readable(self.sock, STANDBY_DELAY_SECONDS):
                # The worker paused: the next call's join would wait, so a standby
                # pays for it now. (A call that comes at once finds the join cheap.)
                self.prepare(pending)
                pending = None
                continue
            try:
                request, fds = _recv_message(self.sock)
            except (EOFError, ConnectionError):
                break
            op = request.get("op")
            if op == "prepare":
                for fd in fds:
                    os.close(fd)
                pending = tuple(request["cgroups"])
                del request
                continue  # one-way: the worker does not wait for it
            pending = None
            if op == "spawn":
                reply = self.spawn(request, fds)
            elif op == "reap":
                for fd in fds:
                    os.close(fd)
                reply = self.reap(request["pid"])
            else:
                for fd in fds:
                    os.close(fd)
                reply = {"error": f"unknown request {op!r}", "errno": 0, "stage": "request"}
            del request
            _send_message(self.sock, reply)
            self.reap_orphans()
        self.shutdown()

    def reap_orphans(self):
        """Reap exited processes that were reparented here (not the commands the worker holds).

        This process is a child subreaper: what a command's process tree
        leaves behind when its parent exits first (bubblewrap's namespace
        init, double-forked processes) comes here instead of to the machine's
        init, which may never reap it; until reaped it would keep counting
        against the sandbox user's process limit and the call's pids cgroup.
        """
        try:
            with open(f"/proc/self/task/{os.getpid()}/children", "rb") as handle:
                pids = [int(word) for word in handle.read().split()]
        except (OSError, ValueError):
            return
        for pid in pids:
            if pid not in self.running:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)

    def shutdown(self):
        self.drop_standby()
        for pid in list(self.running):
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(OSError):
                    kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def reap(self, pid):
        if pid not in self.running:
            return {"error": f"pid {pid} is not a command of this server", "errno": 0}
        _, status, usage = os.wait4(pid, 0)
        self.running.discard(pid)
        # Before answering: the call's cgroup is reused only once nothing of it counts.
        self.reap_orphans()
        return {"status": status, "cpu": usage.ru_utime + usage.ru_stime}

    def compiled(self, source):
        code = self.code_cache.get(source)
        if code is None:
            try:
                code = compile(source, "<string>", "exec", dont_inherit=True)
            except (SyntaxError, ValueError):
                return None
            if len(self.code_cache) >= CODE_CACHE_SIZE:
                self.code_cache.pop(next(iter(self.code_cache)))
            self.code_cache[source] = code
        return code

    def spawn(self, request, fds):
        code = None
        if request.get("warm"):
            code = self.compiled(request["argv"][4])
        if code is None:
            # Searched here, before fork: the less the child runs, the less it copies.
            request["program"] = _find_program(request["argv"][0], request["env"].get("PATH"))
        if request.get("loopback"):
            # Loaded here once, so every later child (and standby) has it already.
            try:
                self.relay_loop(request["loopback"]["relay"])
            except Exception as exc:  # any failure is the call's, not the server's
                for fd in fds:
                    os.close(fd)
                return {"error": f"the egress relay: {exc}", "errno": 0, "stage": "relay"}
        err_read, err_write = os.pipe()
        pid = self.hand_to_standby(request, fds, err_write)
        if pid is None:
            try:
                pid = os.fork()
            except OSError as exc:
                for fd in (err_read, err_write, *fds):
                    os.close(fd)
                return {"error": exc.strerror or str(exc), "errno": exc.errno or 0, "stage": "fork"}
            if pid == 0:
                status = 127
                try:
                    os.close(err_read)
                    self.sock.close()
                    self.drop_standby(kill=False)
                    err_write = _dup_high(err_write)
                    status = self.confine_and_run(request, fds, err_write, code, False)
                finally:
                    os._exit(status)
        os.close(err_write)
        for fd in fds:
            os.close(fd)
        report = bytearray()
        while True:
            chunk = os.read(err_read, 4096)
            if not chunk:
                break
            report += chunk
        os.close(err_read)
        if not report:
            self.running.add(pid)
            return {"pid": pid, "warm": code is not None}
        os.waitpid(pid, 0)
        stage, errno, message = report.decode("utf-8", "replace").split("\0", 2)
        return {"error": message, "errno": int(errno or 0), "stage": stage}

    def confine_and_run(self, request, fds, err_write, code, joined):
        """In a child: the command's confinement and run; its exit status.

        A failure is reported on ``err_write`` to the server, never raised.
        """
        try:
            return self.child(request, fds, err_write, code, joined)
        except BaseException as exc:
            stage = getattr(exc, "stage", "exec")
            errno = getattr(exc, "errno", None) or 0
            message = f"{stage}\0{errno}\0{getattr(exc, 'strerror', None) or exc}"
            with contextlib.suppress(OSError):
                os.write(err_write, message.encode("utf-8", "replace"))
            return 127

    def child(self, request, fds, err_write, code, joined):
        """Confine this fresh child, then exec the command (or run it warm)."""
        step = "cgroup"
        try:
            if not joined:
                _join_cgroups(request["cgroups"])
            step = "descriptors"
            if not request["stdin"]:
                fds = [os.open(os.devnull, os.O_RDONLY), *fds]
            high = [_dup_high(fd) for fd in fds]
            for target, fd in enumerate(high):
                os.dup2(fd, target)
            os.closerange(len(high), err_write)
            os.closerange(err_write + 1, 1 << 20)
            # Before a private root's fork: its two processes share the group.
            os.setsid()
            private_root = request.get("private_root")
            if private_root:
                step = "private root"
                self.confine.enter_private_root(private_root)
            loopback = request.get("loopback")
            if loopback:
                step = "network"
                self.loopback.enter_network_namespace()
            step = "cwd"
            os.chdir(request["cwd"])
            step = "rlimits"
            for which, soft, hard in request["rlimits"]:
                resource.setrlimit(which, (soft, hard))
            if code is not None:
                _present_as(request["argv"])
            step = "user"
            if request["switch"]:
                os.setgroups([])
                os.setresgid(request["gid"], request["gid"], request["gid"])
                os.setresuid(request["uid"], request["uid"], request["uid"])
            if private_root:
                self.confine.drop_capabilities()
            os.umask(0o022)
            if loopback:
                step = "relay"
                serve = self.relay_loop(loopback["relay"])
                self.loopback.start_relay(serve, loopback["socket"], loopback["port"])
        except OSError as exc:
            raise ConfinementError(step, exc) from exc
        if code is None:
            # SIGPIPE and SIGXFSZ are at their defaults in this server already.
            if request["program"] is not None:
                with contextlib.suppress(OSError):
                    os.execve(request["program"], request["argv"], request["env"])  # noqa: S606
            os.execvpe(request["argv"][0], request["argv"], request["env"])  # noqa: S606
        # A fresh process after exec is dumpable again.
        _prctl_dumpable(1)
        os.close(err_write)
        return self.warm.run(code, request["argv"][5:], request["env"], request["executable"])

    def relay_loop(self, path):
        """The egress forwarder's relay loop (``_serve``) from ``path``, its modules loaded."""
        serve = self.relays.get(path)
        if serve is None:
            module = _load_file(f"_synthorg_relay{len(self.relays)}", path)
            module._relay_modules()
            serve = self.relays[path] = module._serve
        return serve

    # -- the standby --------------------------------------------------------
    #
    # Joining a cgroup makes the kernel wait for an RCU grace period (several
    # milliseconds) unless another join happened just before, so a call that
    # comes after a pause would pay for it on its way to exec. After each
    # call the worker names the (pooled, empty) cgroups the next call will
    # get; when no request follows within STANDBY_DELAY_SECONDS, a child
    # forked here joins them and waits, and the next spawn for those cgroups
    # hands its request and descriptors to it instead of forking. It runs the
    # same confinement steps, less the join.

    def prepare(self, cgroups):
        """Have a standby child waiting in ``cgroups`` (replacing one elsewhere)."""
        if self.standby is not None:
            if self.standby[2] == cgroups and self.standby_alive():
                return
            self.drop_standby()
        if not cgroups:
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return
        if pid == 0:
            status = 0
            try:
                ours.close()
                self.sock.close()
                status = self.wait_as_standby(theirs, cgroups)
            finally:
                os._exit(status)
        theirs.close()
        self.standby = (pid, ours, cgroups)

    def wait_as_standby(self, sock, cgroups):
        """In the standby: join ``cgroups``, then run the one command handed over."""
        try:
            _join_cgroups(cgroups)
            request, fds = _recv_message(sock)
            sock.sendall(STANDBY_ACK)
        except (OSError, EOFError):
            return 0  # the server dropped this standby (or the join failed)
        sock.close()
        err_write = _dup_high(fds.pop())
        code = self.compiled(request["argv"][4]) if request.get("warm") else None
        return self.confine_and_run(request, fds, err_write, code, True)

    def standby_alive(self):
        if self.standby is None:
            return False
        try:
            pid, _ = os.waitpid(self.standby[0], os.WNOHANG)
        except ChildProcessError:
            return False  # reaped already
        return pid == 0

    def drop_standby(self, kill=True):
        standby, self.standby = self.standby, None
        if standby is None:
            return
        pid, sock, _ = standby
        sock.close()
        if kill:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)

    def hand_to_standby(self, request, fds, err_write):
        """The standby's pid once it holds the request, or None to fork instead."""
        standby = self.standby
        if standby is None or standby[2] != tuple(request["cgroups"]):
            return None
        if not self.standby_alive():
            self.drop_standby()
            return None
        pid, sock, _ = standby
        body = marshal.dumps(request)
        payload = memoryview(HEADER.pack(len(body)) + body)
        passed = struct.pack(f"{len(fds) + 1}i", *fds, err_write)
        try:
            sent = sock.sendmsg(
                [payload], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, passed)], socket.MSG_NOSIGNAL
            )
            while sent < len(payload):
                sent += sock.send(payload[sent:], socket.MSG_NOSIGNAL)
            # It holds the request once it says so; a standby that died waiting
            # (killed with its group) never does, and a fresh child is forked.
            sock.settimeout(STANDBY_ACK_SECONDS)
            acknowledged = sock.recv(1) == STANDBY_ACK
        except OSError:
            acknowledged = False
        if not acknowledged:
            self.drop_standby()
            return None
        self.standby = None
        sock.close()
        return pid


def _readable(sock, timeout):
    ready, _, _ = select.select([sock], [], [], timeout)
    return bool(ready)


def _join_cgroups(paths):
    pid = str(os.getpid()).encode()
    for path in paths:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, pid)
        finally:
            os.close(fd)


def _load_sibling(name):
    """Load ``name``.py from this file's directory (not importable under -I)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    return _load_file(f"_synthorg_{name}", path)


def _load_file(name, path):
    """Load the module at ``path`` under ``name``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _dup_high(fd):
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)


def _find_program(name, path):
    """The file ``execvpe`` would most likely run for ``name`` on ``path``, or None.

    Checked as this (privileged) process; the child still falls back to the
    full ``execvpe`` search when running it fails, so the result is the same.
    """
    if "/" in name:
        return name
    for directory in (path if path is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if (st.st_mode & 0o170000) == 0o100000 and st.st_mode & 0o111:
            return candidate
    return None


def main():
    fd = int(sys.argv[1])
    startup_keys = set(filter(None, sys.argv[2].split(","))) if len(sys.argv) > 2 else set()
    # Its requests are waited for: a descriptor handed over non-blocking would end the
    # server at its first wait.
    os.set_blocking(fd, True)
    sock = socket.socket(fileno=fd)
    _prctl_dumpable(0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    # Commands start with these at their defaults (as subprocess restores
    # them); this server dies with a broken socket, which is what it wants.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    for name in PRELOAD:
        __import__(name)
    import gc

    gc.collect()
    gc.freeze()
    Server(sock, startup_keys).serve()


if __name__ == "__main__":
    main()
