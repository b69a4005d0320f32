"""`python -m synthorg_site.launcher`: the embedded Redis, daphne, a Celery worker and beat.

Every child runs in its own session, so Ctrl-C reaches only the launcher, which then
stops the children in order. A worker or beat that exits is started again (with a
growing pause, at most RESTARTS_PER_WINDOW times within RESTART_WINDOW_SECONDS); any
other child that dies, or one that keeps dying, is named and the launcher exits 1: the
console never runs half-up.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from common.platform import runtime
from common.platform.metrics.process import ENV_NAME as MULTIPROC_ENV
from common.platform.metrics.process import multiprocess_dir_tidy
from synthorg_site.launcher.children import (
    Child,
    ChildFailedError,
    ChildSpec,
    log_tail,
    start_child,
    stop_child,
    wait_ready,
)
from synthorg_site.launcher.embedded_redis import RedisBinaryMissingError, redis_server_argv
from synthorg_site.launcher.private_state import secure_private_state
from synthorg_site.launcher.stop_signals import StopSignals

# Every queue of synthorg_site.celery: a launched worker serves them all.
QUEUES = ("default", "sandbox.subprocess", "sandbox.namespace", "sandbox.docker", "maintenance")
EXIT_CHILD_DIED = 1
RESTARTS_PER_WINDOW = 5
RESTART_WINDOW_SECONDS = 300.0
RESTART_PAUSE_MAX_SECONDS = 30.0
EXIT_CANNOT_START = 2
# How often the main loop looks at its children when no signal wakes it.
WATCH_INTERVAL_SECONDS = 0.2


def _say(message: str) -> None:
    print(f"synthorg | {message}", flush=True)


def _socket_answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        sock.connect(str(path))
        sock.sendall(b"PING\r\n")
        return sock.recv(16).startswith(b"+PONG")


def _http_answers(url: str) -> bool:
    """Any HTTP answer will do: /healthz says 503 until the worker is up, started after."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:  # noqa: S310 - own loopback URL
            return bool(response.status)
    except urllib.error.HTTPError:
        return True


def _healthy(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - own loopback URL
        return response.status == 200


def _worker_name(index: int) -> str:
    return "worker" if index == 0 else f"worker{index + 1}"


def child_specs(*, host: str, port: int, workers: int = 1) -> list[ChildSpec]:
    env = dict(os.environ)
    python = sys.executable
    specs: list[ChildSpec] = []
    if runtime.uses_embedded_redis():
        sock = runtime.embedded_redis_socket()
        if sock.exists():
            sock.unlink()
        specs.append(
            ChildSpec(
                name="redis",
                argv=redis_server_argv(socket=sock, data_dir=runtime.var_dir() / "redis"),
                env=env,
                ready=lambda: _socket_answers(sock),
            )
        )
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/healthz"  # noqa: S104
    specs += [
        ChildSpec(
            name="web",
            # No --proxy-headers: daphne would believe anyone's X-Forwarded-For; the
            # client address comes from SYNTHORG_TRUSTED_PROXIES (http_edge.client_address).
            argv=[python, "-m", "daphne", "-b", host, "-p", str(port),
                  "synthorg_site.asgi:application"],
            env=env,
            ready=lambda: _http_answers(url),
        ),
        *(
            ChildSpec(
                name=_worker_name(n),
                argv=[python, "-m", "celery", "-A", "synthorg_site", "worker",
                      "-Q", ",".join(QUEUES),
                      "-n", f"{_worker_name(n)}@{socket.gethostname()}",
                      "--without-gossip", "--without-mingle", "-l", "INFO"],
                env=env,
                # Ready once /healthz is green: the worker's heartbeat and its sandbox
                # probes are in, so "console ready" is never printed early.
                ready=lambda: _healthy(url),
                ready_timeout=180.0,
                restart=True,
                # SIGTERM lets its running calls finish (a call's own time limit bounds
                # them); a second Ctrl-C stops it at once.
                stop_grace=float(os.environ.get("SYNTHORG_WORKER_STOP_GRACE_SECONDS", "90")),
            )
            for n in range(workers)
        ),
        ChildSpec(
            name="beat",
            argv=[python, "-m", "celery", "-A", "synthorg_site", "beat", "-l", "WARNING",
                  "-s", str(runtime.var_dir() / "celerybeat-schedule"),
                  "--pidfile", ""],
            env=env,
            restart=True,
        ),
    ]  # fmt: skip
    return specs


def _wait_for_any_exit(children: list[Child], signals: StopSignals) -> Child | None:
    """The first child to exit, or None once a stop signal comes."""
    while not signals.wait(WATCH_INTERVAL_SECONDS):
        for child in children:
            if child.process.poll() is not None:
                return child
    return None


def _restart_pause(died: Child, restarts: dict[str, list[float]]) -> float | None:
    """Seconds to wait before starting ``died`` again, or None when it is not restarted
    (not a restartable child, or it exited too often lately)."""
    if not died.spec.restart:
        return None
    now = time.monotonic()
    recent = [t for t in restarts.get(died.name, []) if now - t < RESTART_WINDOW_SECONDS]
    if len(recent) >= RESTARTS_PER_WINDOW:
        return None
    restarts[died.name] = [*recent, now]
    return float(min(2 ** len(recent), RESTART_PAUSE_MAX_SECONDS))


def child_log_dir() -> Path | None:
    """Where the children's output goes: ``<var>/log/`` (private to the console's user),
    so the terminal shows the launcher's own lines, the address and the credentials;
    ``SYNTHORG_CHILD_LOGS=terminal`` relays every child's lines to the terminal instead."""
    if os.environ.get("SYNTHORG_CHILD_LOGS", "files") == "terminal":
        return None
    directory = runtime.var_dir() / "log"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    return directory


def _shown(path: Path) -> str:
    """``path`` as a person would type it from the directory they started in."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _say_ready(host: str, port: int, log_dir: Path | None) -> None:
    shown = "localhost" if host in ("0.0.0.0", "127.0.0.1", "::") else host  # noqa: S104
    _say(f"console ready at http://{shown}:{port}/  (health: /healthz)")
    credentials = runtime.var_dir() / "demo-credentials.txt"
    if credentials.exists():
        people = [
            line.split(" ", 2)
            for line in credentials.read_text(errors="replace").splitlines()
            if line.strip() and not line.startswith("agent ")
        ]
        _say(f"sign in as (these and the demo agents' tokens are in {_shown(credentials)}):")
        for role, username, password in (p for p in people if len(p) == 3):
            _say(f"  {role:<8} {username:<20} {password}")
    if log_dir is not None:
        where = _shown(log_dir)
        _say(f"each process logs to {where}/ (SYNTHORG_CHILD_LOGS=terminal shows them here)")
    _say("press Ctrl-C to stop")


def _say_last_words(child: Child, log_dir: Path | None) -> None:
    """A child that died: the end of its log, where the reason usually is."""
    if log_dir is None:
        return
    for line in log_tail(log_dir / f"{child.name}.log"):
        print(f"{child.name:>7} | {line}", flush=True)


def run(*, host: str, port: int, signals: StopSignals, workers: int = 1) -> int:
    """Start the children in order, watch them, stop them all; the exit status.

    Everything happens here, in the main loop: the signal handlers only wake it.
    """
    log_dir = child_log_dir()
    # The children's metric files of a previous run would be summed into this one's;
    # a live process's files (another node sharing the directory) are never removed.
    multiprocess_dir_tidy(Path(os.environ.get(MULTIPROC_ENV) or runtime.var_dir() / "metrics"))
    try:
        specs = child_specs(host=host, port=port, workers=workers)
    except RedisBinaryMissingError as exc:
        _say(str(exc))
        return EXIT_CANNOT_START
    children: list[Child] = []
    code = 0
    try:
        for spec in specs:
            if signals.stop_requested:
                break
            child = start_child(spec, log_dir=log_dir)
            children.append(child)
            if not wait_ready(child, interrupted=signals.wait):
                break
            _say(f"{spec.name} started (pid {child.process.pid})")
        if not signals.stop_requested:
            _say_ready(host, port, log_dir)
        restarts: dict[str, list[float]] = {}
        while (died := _wait_for_any_exit(children, signals)) is not None:
            pause = _restart_pause(died, restarts)
            _say_last_words(died, log_dir)
            if pause is None:
                _say(
                    f"{died.name} exited unexpectedly with code {died.process.returncode}; "
                    "stopping the console"
                )
                code = EXIT_CHILD_DIED
                break
            _say(
                f"{died.name} exited with code {died.process.returncode}; "
                f"restarting it in {pause:g}s"
            )
            if signals.wait(pause):
                break
            restarted = start_child(died.spec, log_dir=log_dir)
            children[children.index(died)] = restarted
            _say(f"{died.name} started (pid {restarted.process.pid})")
    except ChildFailedError as exc:
        if not signals.stop_requested:
            for child in children:
                if child.name == exc.name:
                    _say_last_words(child, log_dir)
            _say(f"{exc.name} failed to start: {exc}; stopping the console")
            code = EXIT_CHILD_DIED
    finally:
        seen = signals.count()
        if seen:
            _say("stopping (Ctrl-C again to stop at once)")

        def hurry(timeout: float) -> bool:
            # Only a person's second Ctrl-C: a SIGTERM often comes twice (from the
            # process group and again from `make`), and must still stop gracefully.
            return signals.wait_beyond(seen, timeout, only=signal.SIGINT)

        # Stop in reverse order: beat and workers before the web, Redis last.
        for child in reversed(children):
            stop_child(child, hurry=hurry)
        _say("stopped")
    return code


def main(argv: list[str] | None = None) -> int:
    # First of all: a signal from here on only wakes the main loop.
    signals = StopSignals()
    parser = argparse.ArgumentParser(prog="synthorg-launcher", description=__doc__)
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    # Worker processes, each supervising SYNTHORG_WORKER_CALLS calls at once (one per
    # core lets the calls' own Python work use every core).
    parser.add_argument("--workers", type=int, default=int(os.environ.get("SYNTHORG_WORKERS", "1")))
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= 64:
        parser.error("--workers: a whole number from 1 to 64")
    grace = os.environ.get("SYNTHORG_WORKER_STOP_GRACE_SECONDS", "90")
    try:
        if not 0 <= float(grace) <= 86400:
            raise ValueError(grace)
    except ValueError:
        parser.error("SYNTHORG_WORKER_STOP_GRACE_SECONDS: seconds from 0 to 86400")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")
    secure_private_state(_say)
    # manage.py run later without SYNTHORG_ENV then finds the console `make run` started.
    runtime.remember_mode()
    started = time.monotonic()
    code = run(host=args.host, port=args.port, signals=signals, workers=args.workers)
    if code:
        _say(f"exit {code} after {time.monotonic() - started:.1f}s")
    return code


if __name__ == "__main__":
    sys.exit(main())
