"""The first metrics of a freshly started process, written by many threads at once:
each is built once, and a count never fails what it counts."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from common.testing import BASE_DIR

RACE = textwrap.dedent(
    """
    import os, sys, threading
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")
    import django
    django.setup()
    from prometheus_client import REGISTRY, Counter
    from common.platform.metrics import instruments

    start, failures = threading.Barrier(32), []

    def first_use(n):
        start.wait()
        try:
            instruments.call_settled(tool=f"t{n % 3}", status="succeeded", created_at=None)
            instruments.sandbox_ran(backend="subprocess", wall_seconds=0.01, command_seconds=0.0)
        except BaseException as exc:
            failures.append(repr(exc))

    threads = [threading.Thread(target=first_use, args=(n,)) for n in range(32)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    # Control: what a second, unguarded build of the same instruments meets.
    try:
        Counter("synthorg_calls", "again", ["tool", "status"])
        second = "registered twice"
    except ValueError as exc:
        second = "refused: " + str(exc)[:40]
    print(len(failures), failures[:1], second)
    """
)


@pytest.mark.django_db
def test_threads_writing_the_first_metrics_at_once_all_succeed(test_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RACE],
        env=test_env,
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    failures, _, control = done.stdout.strip().splitlines()[-1].partition(" [")
    assert failures == "0", done.stdout
    assert "refused: Duplicated timeseries" in control, done.stdout
