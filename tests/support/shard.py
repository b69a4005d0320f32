"""Each xdist worker of ``make test`` gets a Redis server and a var/ of its own.

Loaded with ``-p tests.support.shard`` by scripts/test.sh, which starts one Redis
server per worker (``redis-gw<N>.sock`` under the run directory). It must act before
pytest-django imports the settings, which read ``REDIS_URL`` and ``SYNTHORG_VAR_DIR``
once: a plugin named with ``-p`` is imported before that, conftest files only after.
The database needs nothing here: pytest-django gives each worker its own test
database (``test_synthorg_gw<N>``).

Without xdist (one process) nothing changes.
"""

from __future__ import annotations

import os
from pathlib import Path


def _own_environment() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    run_dir = os.environ.get("SYNTHORG_TEST_RUN_DIR", "")
    if not worker or not run_dir:
        return
    socket = Path(run_dir) / f"redis-{worker}.sock"
    if not socket.exists():
        raise RuntimeError(
            f"{socket} is missing: scripts/test.sh starts one Redis server per worker "
            "(SYNTHORG_TEST_WORKERS); run more workers than that and they would share one"
        )
    os.environ["REDIS_URL"] = f"unix://{socket}?db=0"
    var_dir = Path(run_dir) / f"var-{worker}"
    var_dir.mkdir(exist_ok=True)
    os.environ["SYNTHORG_VAR_DIR"] = str(var_dir)


_own_environment()
