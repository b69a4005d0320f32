"""The launcher as a user meets it: the whole console up, and never half-running."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.testing import BASE_DIR, free_port, http_status, python_argv, wait_until

pytestmark = pytest.mark.integration
CHILD_LINE = re.compile(r"synthorg \| (\w+) started \(pid (\d+)\)")


def _env(tmp_path: Path) -> dict[str, str]:
    # The suite's metrics directory stays the suite's: the launcher empties the one it uses.
    suite_only = {"DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"}
    env = {k: v for k, v in os.environ.items() if k not in suite_only}
    env.update(SYNTHORG_ENV="dev", SYNTHORG_VAR_DIR=str(tmp_path / "var"), LOG_FORMAT="console")
    return env


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path, int]]:
    """The launcher on SQLite and its embedded Redis, as `make run` starts it."""
    env = _env(tmp_path)
    subprocess.run(python_argv("manage.py", "migrate", "-v0"), cwd=BASE_DIR, env=env, check=True)
    port = free_port()
    log = tmp_path / "launcher.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            python_argv("-m", "synthorg_site.launcher", "--port", str(port)),
            cwd=BASE_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    try:
        yield process, log, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        for pid in _children(log).values():
            _reap(pid)


def _children(log: Path) -> dict[str, int]:
    return {name: int(pid) for name, pid in CHILD_LINE.findall(log.read_text(errors="replace"))}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def _reap(pid: int) -> None:
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)


def _wait_healthy(process: subprocess.Popen[str], log: Path, port: int) -> dict[str, int]:
    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"launcher exited early:\n{log.read_text()}")
        ready = "console ready at" in log.read_text(errors="replace")
        return ready and http_status(f"http://127.0.0.1:{port}/healthz") == 200

    wait_until(healthy, timeout=180, what="the console to say it is ready, /healthz 200")
    children = _children(log)
    assert set(children) == {"redis", "web", "worker", "beat"}, log.read_text()
    return children


def test_a_worker_that_dies_is_started_again_and_the_console_serves(
    console: tuple[subprocess.Popen[str], Path, int],
) -> None:
    process, log, port = console
    children = _wait_healthy(process, log, port)
    os.kill(children["worker"], signal.SIGKILL)
    wait_until(
        lambda: _children(log)["worker"] != children["worker"],
        timeout=60,
        what="the launcher to start the worker again",
    )
    assert process.poll() is None, log.read_text()
    assert "worker exited with code" in log.read_text() and "restarting it" in log.read_text()
    wait_until(
        lambda: http_status(f"http://127.0.0.1:{port}/healthz") == 200,
        timeout=120,
        what="/healthz to be 200 again with the new worker",
    )
    again = _children(log)
    assert _alive(again["worker"]) and not _alive(children["worker"])
    assert again["web"] == children["web"] and again["redis"] == children["redis"]


def test_a_child_that_dies_is_named_and_the_launcher_exits_nonzero(
    console: tuple[subprocess.Popen[str], Path, int],
) -> None:
    """The web node is not restarted: the console never runs half-up."""
    process, log, port = console
    children = _wait_healthy(process, log, port)
    os.kill(children["web"], signal.SIGKILL)
    code = process.wait(timeout=60)
    output = log.read_text()
    assert code != 0
    assert "web exited unexpectedly" in output
    wait_until(
        lambda: not any(_alive(pid) for pid in children.values()),
        timeout=30,
        what="every other child to be stopped",
    )


def test_ctrl_c_stops_every_child(console: tuple[subprocess.Popen[str], Path, int]) -> None:
    process, log, port = console
    children = _wait_healthy(process, log, port)
    assert "console ready at http://localhost:" in log.read_text()
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 0, log.read_text()
    assert not [name for name, pid in children.items() if _alive(pid)]
    assert "stopped" in log.read_text()


def test_launched_workers_serve_every_queue_of_the_celery_app() -> None:
    from synthorg_site.celery import QUEUES
    from synthorg_site.launcher.__main__ import QUEUES as LAUNCHED
    from synthorg_site.launcher.__main__ import child_specs

    assert LAUNCHED == QUEUES
    specs = child_specs(host="127.0.0.1", port=8000, workers=2)
    workers = [spec for spec in specs if spec.name.startswith("worker")]
    assert [w.name for w in workers] == ["worker", "worker2"]
    assert all(w.restart for w in workers)
    names = [w.argv[w.argv.index("-n") + 1].split("@")[0] for w in workers]
    assert names == ["worker", "worker2"]
