"""Parts a fault test stops and starts under a running console: a Redis of its own on
loopback TCP (append-only, as the production section runs it) and the suite's own
PostgreSQL (restarted with ``pg_ctl``, as an operator's maintenance would)."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
from pathlib import Path

from common.testing import free_port, require, wait_until


class OwnRedis:
    """A redis-server of the test's own, on a loopback TCP port, append-only."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--appendonly", "yes", "--save", "", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(self._answers, timeout=30, what="redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)

    def _answers(self) -> bool:
        import redis

        return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())


def restart_suite_postgres() -> None:
    """Restart the suite's PostgreSQL (``scripts/test.sh`` started it): a fast shutdown,
    which ends every session at once, then a start; returns once it accepts sessions."""
    run_dir = os.environ.get("SYNTHORG_TEST_RUN_DIR", "")
    pgdata = Path(run_dir) / "pgdata"
    require(pgdata.is_dir(), "the suite's PostgreSQL is started by scripts/test.sh (make test)")
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    pg_ctl = found[-1] if found else "pg_ctl"
    log = str(Path(run_dir) / "pg.log")
    argv = [pg_ctl, "-D", str(pgdata), "-l", log, "-m", "fast", "-w", "-t", "60", "restart"]
    if os.geteuid() == 0:
        argv = ["runuser", "-u", "postgres", "--", *argv]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
