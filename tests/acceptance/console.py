"""The console as `make run` starts it, driven only through its public doors.

`make run` migrates, seeds the demo organisation and execs the launcher with
SYNTHORG_ENV=dev, SQLite and the embedded Redis on its unix socket, all in var/.
Here the same steps run in a temporary var/ directory (SYNTHORG_VAR_DIR) on a
free port (PORT), with none of the test suite's own database, Redis or worker.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from common.testing import BASE_DIR, free_port, http_status, python_argv, wait_until

CHILD_LINE = re.compile(r"synthorg \| (\w+) started \(pid (\d+)\)")
CHILDREN = frozenset({"redis", "web", "worker", "beat"})
# A launcher of the suite's own making never waits this long for health or for a stop.
START_TIMEOUT = 240.0
STOP_TIMEOUT = 90.0
# What the suite's environment sets and `make run` would not: the private
# PostgreSQL and Redis of scripts/test.sh, its run mode, var/ and its test-only tools.
SUITE_ONLY_ENV = (
    "DATABASE_URL",
    "REDIS_URL",
    "SYNTHORG_ENV",
    "SYNTHORG_VAR_DIR",
    "SYNTHORG_EXTRA_TOOL_MODULES",
    "DJANGO_SETTINGS_MODULE",
    "PORT",
    "HOST",
    "LOG_FORMAT",
    # The suite's own metrics directory: a console's launcher empties the one it uses.
    "PROMETHEUS_MULTIPROC_DIR",
)
TRACEBACK = "Traceback (most recent call last)"


def make_run_env(var_dir: Path, *, port: int | None = None) -> dict[str, str]:
    """The environment `make run` gives its commands, with var/ at ``var_dir``."""
    env = {k: v for k, v in os.environ.items() if k not in SUITE_ONLY_ENV}
    env["SYNTHORG_ENV"] = "dev"
    env["SYNTHORG_VAR_DIR"] = str(var_dir)
    # The Makefile's DEMO_CONFIG: one's own synthorg.yaml beside manage.py, else the demo's.
    own = BASE_DIR / "synthorg.yaml"
    demo = BASE_DIR / "deploy" / "demo" / "synthorg.yaml"
    env["SYNTHORG_CONFIG"] = env.get("SYNTHORG_CONFIG") or str(own if own.exists() else demo)
    if port is not None:
        env["PORT"] = str(port)
    return env


def manage(
    env: Mapping[str, str], *args: str, timeout: float = 300, stdin: str | None = None
) -> str:
    """Run `manage.py ARGS` as a user would (``stdin`` typed in, as `synthorg_secret set`
    reads its value); return its output, fail on a non-zero exit."""
    done = subprocess.run(
        python_argv("manage.py", *args),
        cwd=BASE_DIR,
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"manage.py {' '.join(args)} exited {done.returncode}:\n{output}"
    return output


def prepare_var(var_dir: Path) -> None:
    """The two steps `make run` takes before the launcher: migrate, then seed the demo."""
    env = make_run_env(var_dir)
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "synthorg_demo")


def copy_var(template: Path, var_dir: Path) -> None:
    """A fresh var/ from a prepared one (its database, key and credentials; no sockets)."""
    shutil.copytree(template, var_dir, ignore=shutil.ignore_patterns("redis", "celerybeat-*"))


@dataclass(frozen=True)
class Credentials:
    """var/demo-credentials.txt: `ROLE USERNAME PASSWORD` per person, `agent NAME TOKEN`."""

    people: dict[str, tuple[str, str]]
    agents: dict[str, str]

    @classmethod
    def read(cls, path: Path) -> Credentials:
        people: dict[str, tuple[str, str]] = {}
        agents: dict[str, str] = {}
        for line in path.read_text().splitlines():
            kind, name, secret = line.split(" ", 2)
            if kind == "agent":
                agents[name] = secret
            else:
                people[kind] = (name, secret)
        return cls(people=people, agents=agents)


@dataclass
class Launcher:
    """One `python -m synthorg_site.launcher` process and what it printed."""

    process: subprocess.Popen[str]
    var_dir: Path
    port: int
    env: dict[str, str]
    log_path: Path
    # Every process seen under the launcher: pid -> its start time, so a pid the
    # kernel hands to an unrelated process later is never taken for ours.
    descendants: dict[int, int] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        """What it printed, then what each child wrote to its log file (``<var>/log/``)."""
        printed = self.log_path.read_text(errors="replace")
        logs = sorted((self.var_dir / "log").glob("*.log"))
        return printed + "".join(
            "".join(
                f"{path.stem:>7} | {line}\n"
                for line in path.read_text(errors="replace").splitlines()
            )
            for path in logs
        )

    def own_output(self) -> str:
        """What the launcher itself printed: its own lines and anything unprefixed (a
        stack dump of its own), without the lines it relays from its children."""
        relayed = re.compile(rf"^\s*({'|'.join(sorted(CHILDREN))}) \| ")
        return "\n".join(line for line in self.output().splitlines() if not relayed.match(line))

    def children(self) -> dict[str, int]:
        return {name: int(pid) for name, pid in CHILD_LINE.findall(self.output())}

    def wait_started(self, names: frozenset[str] = CHILDREN) -> dict[str, int]:
        """Wait until the launcher has named every child in ``names`` as started."""

        def started() -> bool:
            self._still_running()
            return names <= set(self.children())

        wait_until(started, timeout=START_TIMEOUT, what=f"the launcher to start {sorted(names)}")
        return self.children()

    def wait_healthy(self) -> dict[str, int]:
        """Wait for "console ready" and /healthz 200; return the children's pids."""

        def healthy() -> bool:
            self._still_running()
            ready = "console ready at" in self.output()
            return ready and http_status(self.base_url + "/healthz") == 200

        wait_until(healthy, timeout=START_TIMEOUT, what="the console to be ready, /healthz 200")
        children = self.children()
        assert set(children) == CHILDREN, self.output()
        return children

    def _still_running(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(
                f"launcher exited early with {self.process.returncode}:\n{self.output()[-6000:]}"
            )

    def remember_descendants(self) -> dict[int, int]:
        """Note every process under the launcher now (pool workers, spawn servers too)."""
        for pid in descendants_of(self.process.pid):
            started = start_time(pid)
            if started is not None:
                self.descendants.setdefault(pid, started)
        return self.descendants

    def _ours_alive(self) -> list[int]:
        return [
            pid
            for pid, started in self.descendants.items()
            if start_time(pid) == started and alive_not_zombie(pid)
        ]

    def signal(self, signum: int) -> None:
        self.remember_descendants()
        self.process.send_signal(signum)

    def signal_group(self, signum: int) -> None:
        """`kill -SIG -- -PGID`: the launcher's own process group."""
        self.remember_descendants()
        os.killpg(self.process.pid, signum)

    def wait_exit(self, timeout: float = STOP_TIMEOUT) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the launcher did not exit within {timeout:g}s:\n{self.output()[-6000:]}"
            ) from None

    def survivors(self) -> list[str]:
        """Every process the launcher started (or they started) that still lives."""
        alive = self._ours_alive()
        # A grandchild that left its parent still carries its session: each launcher
        # child (one seen under the launcher) leads a session of its own.
        sessions = {pid for pid in self.children().values() if pid in self.descendants}
        alive += [pid for pid in all_pids() if pid not in alive and session_of(pid) in sessions]
        return [f"{pid} {command_line(pid)}" for pid in sorted(set(alive))]

    def wait_all_gone(self, timeout: float = 30.0) -> None:
        """Every child and grandchild exits soon after the launcher does."""
        wait_until(
            lambda: not self.survivors(),
            timeout=timeout,
            what="every process of the console to exit",
            poll=0.2,
        )

    def kill_everything(self) -> None:
        """Last resort after a failed test: nothing of this console outlives it."""
        if self.process.poll() is None:
            self.remember_descendants()
            self.process.kill()
            self.process.wait(timeout=10)
        # Only processes seen under this launcher, still with the same start time.
        for pid in self._ours_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def start_launcher(
    var_dir: Path, log_path: Path, extra_env: Mapping[str, str] | None = None
) -> Launcher:
    """Start `python -m synthorg_site.launcher` exactly as `make run` execs it (with
    ``extra_env`` added, as a user exporting variables before `make run`)."""
    port = free_port()
    env = {**make_run_env(var_dir, port=port), **(extra_env or {})}
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            python_argv("-m", "synthorg_site.launcher"),
            cwd=BASE_DIR,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            # Its own process group, as a shell gives a job: `kill -- -PGID` reaches it.
            start_new_session=True,
        )
    return Launcher(process=process, var_dir=var_dir, port=port, env=env, log_path=log_path)


def stop_launcher(launcher: Launcher, signum: int = signal.SIGTERM) -> int:
    """Stop it by ``signum``; return its exit status once every process of it is gone."""
    if launcher.process.poll() is None:
        launcher.signal(signum)
    code = launcher.wait_exit()
    launcher.wait_all_gone()
    return code


def all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Fields after the command name, which may itself hold spaces and parentheses.
    return raw.rsplit(") ", 1)[1].split()


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or None when it is gone."""
    fields = _stat(pid)
    return int(fields[19]) if fields is not None else None


def alive_not_zombie(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def session_of(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[3]) if fields is not None and fields[0] not in ("Z", "X") else None


def descendants_of(root: int) -> set[int]:
    parents: dict[int, list[int]] = {}
    for pid in all_pids():
        fields = _stat(pid)
        if fields is not None:
            parents.setdefault(int(fields[1]), []).append(pid)
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
    except OSError:
        return "?"


# --- People, through the browser's sign-in form and the public API.


def sign_in(base_url: str, username: str, password: str, *, timeout: float = 120) -> httpx.Client:
    """A browser-like session: signed in through /accounts/login/, CSRF header set."""
    http = httpx.Client(base_url=base_url, timeout=timeout, follow_redirects=False)
    form = http.get("/accounts/login/")
    assert form.status_code == 200, form.text[:2000]
    csrf = http.cookies["csrftoken"]
    answer = http.post(
        "/accounts/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": csrf},
        headers={"Referer": base_url + "/accounts/login/"},
    )
    assert answer.status_code == 302, f"sign-in as {username} failed: {answer.text[:2000]}"
    # Django rotates the CSRF token at sign-in.
    http.headers["X-CSRFToken"] = http.cookies.get("csrftoken") or csrf
    http.headers["Referer"] = base_url + "/"
    return http


def agent_client(base_url: str, token: str, *, timeout: float = 120) -> httpx.Client:
    return httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
    )


def pending_approval_for(person: httpx.Client, invocation_id: str) -> dict[str, Any] | None:
    """The pending approval request of one invocation, as GET /api/v1/approvals/ lists it."""
    listed = person.get("/api/v1/approvals/", params={"status": "pending"})
    assert listed.status_code == 200, listed.text
    for row in listed.json()["results"]:
        if row["invocation"]["id"] == str(invocation_id):
            return dict(row)
    return None


def wait_for_approval(
    person: httpx.Client, invocation_id: str, *, timeout: float = 60
) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def listed() -> bool:
        row = pending_approval_for(person, invocation_id)
        if row is not None:
            found.append(row)
        return row is not None

    wait_until(listed, timeout=timeout, what=f"an approval request for {invocation_id}", poll=0.3)
    return found[-1]


def decide(
    person: httpx.Client, request_id: str, decision: str = "approve", reason: str = ""
) -> dict[str, Any]:
    """POST /api/v1/approvals/<id>/decide/ as the signed-in person."""
    answer = person.post(
        f"/api/v1/approvals/{request_id}/decide/",
        json={"decision": decision, "reason": reason},
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def call_approved(
    agent: httpx.Client, operator: httpx.Client, tool: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """Ask for a call as an agent (a fresh idempotency key); when the policy asks a
    person, ``operator`` approves it; return the call once it ended (waited for)."""
    created = agent.post(
        "/api/v1/invocations/",
        json={"tool": tool, "arguments": arguments, "idempotency_key": uuid.uuid4().hex},
    )
    assert created.status_code == 201, (tool, created.text)
    invocation = created.json()
    if invocation["status"] == "pending_approval":
        decide(operator, wait_for_approval(operator, invocation["id"])["id"], "approve")
    done = agent.get(f"/api/v1/invocations/{invocation['id']}/", params={"wait": 60})
    assert done.status_code == 200, (tool, done.text)
    return dict(done.json())
