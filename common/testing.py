"""Test helpers: real servers and workers started as subprocesses against the test database."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import pytest

from common.platform.private_state import PRIVATE_UMASK

BASE_DIR = Path(__file__).resolve().parent.parent
ALLOW_SKIP_ENV = "SYNTHORG_TEST_ALLOW_SKIP"
T = TypeVar("T")


def require(condition: bool, what: str) -> None:
    """Fail loudly when a required part is missing; skip only when the user allowed it."""
    if condition:
        return
    if os.environ.get(ALLOW_SKIP_ENV) == "1":
        pytest.skip(f"{what} (skipped: {ALLOW_SKIP_ENV}=1)")
    pytest.fail(f"{what}: `make test` installs and starts it; set {ALLOW_SKIP_ENV}=1 to skip")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(check: Callable[[], bool], *, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as exc:
            last = exc
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last error: {last})")


def http_status(url: str, *, timeout: float = 2.0) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def database_url_for(settings_db: Mapping[str, object]) -> str:
    """A DATABASE_URL naming the database Django is using now (the test database)."""
    engine = str(settings_db["ENGINE"])
    name = str(settings_db["NAME"])
    if engine.endswith("sqlite3"):
        return f"sqlite:///{name}"
    user = settings_db.get("USER") or ""
    password = settings_db.get("PASSWORD") or ""
    host = str(settings_db.get("HOST") or "")
    port = settings_db.get("PORT") or ""
    from urllib.parse import quote

    auth = f"{quote(str(user))}:{quote(str(password))}@" if password else f"{quote(str(user))}@"
    where = quote(host, safe="") if host.startswith("/") else host
    return f"postgres://{auth}{where}{':' + str(port) if port else ''}/{name}"


@dataclass
class RunningProcess:
    process: subprocess.Popen[str]
    log_path: Path

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def running(
    argv: list[str], *, env: Mapping[str, str], log_path: Path, cwd: Path = BASE_DIR
) -> Iterator[RunningProcess]:
    """Run a process for the length of the block, its output in a file; stop it after."""
    log: IO[str] = open(log_path, "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        argv,
        env=dict(env),
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # The launcher's umask (synthorg_site/launcher/private_state.py): what the console
        # makes is private unless it says otherwise, in the tests as under `make run`.
        umask=PRIVATE_UMASK,
    )
    try:
        yield RunningProcess(process=process, log_path=log_path)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        log.close()


def python_argv(*args: str) -> list[str]:
    return [sys.executable, *args]


def run_at_once(count: int, action: Callable[[int], object], *, timeout: float = 120) -> None:
    """Run ``action(0)`` … ``action(count - 1)`` in threads released together, each on
    its own database connection; re-raise the first failure."""
    from django.db import connections

    start = threading.Barrier(count)
    failures: list[BaseException] = []

    def run(n: int) -> None:
        try:
            start.wait()
            action(n)
        except BaseException as exc:  # re-raised in the caller
            failures.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if failures:
        raise failures[0]


def in_fresh_thread(work: Callable[[], T]) -> T:
    """``work()`` in a thread of its own, its answer or its exception handed back.

    A session that drives a browser keeps an event loop running in the main
    thread for as long as the browser lives; asyncio.run and async_to_sync
    refuse to start where a loop runs, and a new thread has none.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="fresh-loop")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_fresh(main: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(main())`` in a thread of its own (see `in_fresh_thread`)."""
    return in_fresh_thread(lambda: asyncio.run(main()))  # type: ignore[arg-type]
