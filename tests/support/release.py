"""A release of the console run beside this checkout: its own code (``manage.py``, web
nodes, workers, beat) on a database, Redis and var/ it shares with the current release,
and a load of calls over whichever web nodes serve at the moment.

The previous release is a commit of this repository's history, unpacked with
``git archive`` into a directory of its own (nothing is added to the repository). It
runs with this checkout's interpreter when every package it locks for running is
installed here at the version it locks, else in a virtualenv of its own made from its
own ``uv.lock``.
"""

from __future__ import annotations

import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest

from common.testing import BASE_DIR, RunningProcess, running

# The last release before the layout moved the record to audit_app and the platform to
# common (one commit later): its tables, tasks and tokens are what an upgrade meets. The
# packages it locks for running are a subset of this checkout's, at the same versions
# (this one adds dnspython, pydantic-settings and python-dotenv), so it runs with this
# checkout's interpreter; a version changed here gives it a virtualenv of its own.
PREVIOUS_RELEASE = "fc4efa6"
# Both releases route calls to these queues (synthorg_site/celery.py): a worker of
# either release takes the calls a web node of the other sends.
QUEUES = "default,sandbox.subprocess,sandbox.namespace,sandbox.docker,maintenance"


@dataclass(frozen=True)
class Release:
    """Where a release's code lives and the interpreter that runs it."""

    name: str
    root: Path
    python: str

    def manage(
        self, env: Mapping[str, str], *args: str, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """``manage.py ARGS`` of this release, as an operator runs it."""
        return subprocess.run(
            [self.python, "manage.py", *args], cwd=self.root, env=dict(env),
            capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    @contextmanager
    def web(self, env: Mapping[str, str], port: int, log_path: Path) -> Iterator[RunningProcess]:
        argv = [self.python, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                "synthorg_site.asgi:application"]  # fmt: skip
        with running(argv, env=env, log_path=log_path, cwd=self.root) as web:
            yield web

    @contextmanager
    def worker(self, env: Mapping[str, str], name: str, log_path: Path) -> Iterator[RunningProcess]:
        argv = [self.python, "-m", "celery", "-A", "synthorg_site", "worker", "-Q", QUEUES,
                "-n", name, "--without-gossip", "--without-mingle", "-l", "INFO"]  # fmt: skip
        with running(argv, env=env, log_path=log_path, cwd=self.root) as worker:
            yield worker

    @contextmanager
    def beat(
        self, env: Mapping[str, str], schedule: Path, log_path: Path
    ) -> Iterator[RunningProcess]:
        argv = [self.python, "-m", "celery", "-A", "synthorg_site", "beat", "-l", "INFO",
                "-s", str(schedule)]  # fmt: skip
        with running(argv, env=env, log_path=log_path, cwd=self.root) as beat:
            yield beat


CURRENT = Release(name="current", root=BASE_DIR, python=sys.executable)


def stop(process: RunningProcess, *, timeout: float = 90) -> int:
    """SIGTERM to the process alone, as ``kill PID`` does (a Celery worker's main process
    then lets its pool finish the calls it runs); its exit status."""
    process.process.send_signal(signal.SIGTERM)
    return process.process.wait(timeout=timeout)


@contextmanager
def release_checkout(commit: str, into: Path) -> Iterator[Release]:
    """The release at ``commit`` unpacked into ``into`` (removed after), with its interpreter."""
    found = subprocess.run(
        ["git", "-C", str(BASE_DIR), "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if found.returncode != 0:
        pytest.fail(
            f"the previous release {commit} is not in this clone's history: the upgrade test "
            "needs a clone with full history (`git fetch --unshallow`, or clone without --depth)"
        )
    into.mkdir(parents=True)
    tarball = into.with_name(f"{into.name}.tar")
    try:
        subprocess.run(
            ["git", "-C", str(BASE_DIR), "archive", "--format=tar", f"--output={tarball}", commit],
            check=True, timeout=300,
        )  # fmt: skip
        subprocess.run(["tar", "-xf", str(tarball), "-C", str(into)], check=True, timeout=300)
        tarball.unlink()
        # Compiled once, as this checkout is (scripts/compile-bytecode.sh): each of the
        # release's processes would otherwise compile its source again at start.
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "-j", "0", "-x", "node_modules", str(into)],
            check=True, timeout=300, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        yield Release(name=commit, root=into, python=_interpreter(into))
    finally:
        tarball.unlink(missing_ok=True)
        shutil.rmtree(into, ignore_errors=True)


def _interpreter(root: Path) -> str:
    """This checkout's interpreter when it has every package the release locks for running
    at the version locked (packages only this release adds are never imported by the
    older code), else a virtualenv made from the release's own lock, inside ``root``."""
    uv = _uv()
    if _runtime_locked(root, uv) <= _runtime_locked(BASE_DIR, uv):
        return sys.executable
    env = dict(os.environ, UV_PROJECT_ENVIRONMENT=str(root / ".venv"))
    done = subprocess.run(
        [uv, "sync", "--frozen", "--no-dev", "--compile-bytecode", "--python", sys.executable],
        cwd=root, env=env,
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"uv sync of the release failed:\n{done.stderr[-3000:]}"
    return str(root / ".venv" / "bin" / "python")


def _uv() -> str:
    found = subprocess.run(
        [str(BASE_DIR / "scripts" / "find-uv.sh")], capture_output=True, text=True, check=False
    ).stdout.strip()
    path = BASE_DIR / found  # printed relative to the checkout when it installed it there
    assert found and found != "false" and shutil.which(str(path)), "uv (scripts/find-uv.sh)"
    return str(path)


def _runtime_locked(root: Path, uv: str) -> set[str]:
    """``name==version`` of every package ``root``'s lock installs for running."""
    done = subprocess.run(
        [uv, "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project", "--quiet"],
        cwd=root, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, f"uv export in {root} failed:\n{done.stderr[-2000:]}"
    lines = (line.split(";", 1)[0].strip() for line in done.stdout.splitlines())
    # Editable lines are the workspace's own packages, not locked versions.
    return {line for line in lines if "==" in line and not line.startswith("-e")}


@contextmanager
def fresh_database(base_url: str) -> Iterator[str]:
    """A new, empty database on ``base_url``'s PostgreSQL (dropped after); its URL."""
    name = f"upgrade_{uuid.uuid4().hex[:10]}"
    admin_url = _with_database(base_url, "postgres")
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(base_url, name)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def fresh_var() -> Iterator[Path]:
    """A new var/ (removed after) in the run directory of ``scripts/test.sh``: the sandbox
    user must reach the agents' workspaces in it, and pytest's own temporary directories
    are private to the user running the tests."""
    parent = os.environ.get("SYNTHORG_TEST_RUN_DIR") or tempfile.gettempdir()
    directory = Path(tempfile.mkdtemp(prefix="upgrade-", dir=parent))
    try:
        directory.chmod(0o755)
        var = directory / "var"
        var.mkdir(mode=0o755)
        yield var
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@dataclass
class Call:
    """A call of the load: the node that answered it, in which phase, and its id."""

    node: str
    phase: str
    id: str


class Load:
    """An agent's clients calling test_counter in a closed loop over the web nodes
    serving at the moment (``serve`` changes them and names the phase).

    Each call carries a marker (its idempotency key too): a client that loses its answer
    (a node stopped under it) asks again with the same key on the next node, as a
    careful client does. A 503 in the envelope is asked again after its Retry-After.
    """

    def __init__(
        self, token: str, nodes: list[str], phase: str, *, clients: int, seconds: float
    ) -> None:
        self.token = token
        self.nodes = list(nodes)
        self.phase = phase
        self.seconds = seconds
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.calls: dict[str, Call] = {}  # marker -> the call, as first answered
        self.unanswered: set[str] = set()
        self.not_json: list[str] = []
        self.refused: list[str] = []
        self.retries: collections.Counter[str] = collections.Counter()
        self.threads = [threading.Thread(target=self._client, args=(n,)) for n in range(clients)]

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=180)

    def serve(self, nodes: list[str], phase: str) -> None:
        with self.lock:
            self.nodes, self.phase = list(nodes), phase

    def answered(self, phase: str) -> list[Call]:
        with self.lock:
            return [call for call in self.calls.values() if call.phase == phase]

    def _next(self, turn: int) -> tuple[str, str]:
        with self.lock:
            return self.nodes[turn % len(self.nodes)], self.phase

    def _client(self, index: int) -> None:
        try:
            self._calls(index)
        except BaseException as exc:
            self.refused.append(f"client stopped: {exc!r}")
            raise

    def _calls(self, turn: int) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with httpx.Client(headers=headers, timeout=httpx.Timeout(40, connect=3)) as http:
            while not self.stop.is_set():
                marker = f"u-{uuid.uuid4().hex[:16]}"
                body = {"tool": "test_counter",
                        "arguments": {"text": marker, "seconds": self.seconds},
                        "idempotency_key": marker, "wait": 20}  # fmt: skip
                with self.lock:
                    self.unanswered.add(marker)
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    node, phase = self._next(turn)
                    turn += 1
                    try:
                        answer = http.post(f"{node}/api/v1/invocations/", json=body)
                    except httpx.HTTPError as exc:
                        self.retries[type(exc).__name__] += 1
                        time.sleep(0.3)
                        continue
                    if not answer.headers.get("content-type", "").startswith("application/json"):
                        self.not_json.append(f"{node} {answer.status_code} {answer.text[:200]}")
                    if answer.status_code in (200, 201):
                        with self.lock:
                            self.calls[marker] = Call(node, phase, answer.json()["id"])
                            self.unanswered.discard(marker)
                        break
                    if answer.status_code == 503:
                        self.retries["503"] += 1
                        time.sleep(min(float(answer.headers.get("Retry-After", 1)), 1.0))
                        continue
                    self.refused.append(f"{node} {answer.status_code} {answer.text[:300]}")
                    break
