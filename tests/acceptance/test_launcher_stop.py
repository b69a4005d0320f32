"""The `make run` launcher stops cleanly on every signal, every time, whatever it is doing.

Each run starts a fresh launcher and signals it at a different point: while the
web server is starting, while the worker is starting, and once the console is
ready. Every child (and their children) must be gone, the exit status 0, and
no stack dump printed.
"""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from tests.acceptance.console import TRACEBACK, Launcher

RUNS_PER_SIGNAL = 10
STACK_DUMPS = (TRACEBACK, "Fatal Python error", "Thread 0x", "Current thread 0x")


def _reach(launcher: Launcher, stage: str) -> None:
    """Wait until the launcher is at ``stage`` of its start."""
    if stage == "web starting":
        launcher.wait_started(frozenset({"redis"}))
    elif stage == "worker starting":
        launcher.wait_started(frozenset({"redis", "web"}))
    else:
        launcher.wait_healthy()


def _assert_clean_stop(launcher: Launcher, code: int) -> None:
    output = launcher.output()
    assert code == 0, f"exit status {code}:\n{output[-6000:]}"
    # The launcher's own stack dumps; a dump from a child's own shutdown is that
    # child's business (and its tests'), not the launcher's.
    for dump in STACK_DUMPS:
        assert dump not in launcher.own_output(), output[-6000:]
    assert "Fatal Python error" not in output, output[-6000:]
    assert "synthorg | stopped" in output, output[-6000:]
    launcher.wait_all_gone()


STAGES = ("web starting", "worker starting", "ready")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_it_cleanly_ten_times_in_a_row(
    fresh_launcher: Callable[[], Launcher], signum: int
) -> None:
    for run in range(RUNS_PER_SIGNAL):
        launcher = fresh_launcher()
        stage = STAGES[run % len(STAGES)]
        _reach(launcher, stage)
        launcher.signal(signum)
        _assert_clean_stop(launcher, launcher.wait_exit())


def test_kill_of_its_process_group_stops_everything(
    fresh_launcher: Callable[[], Launcher],
) -> None:
    """`kill -- -PGID` (SIGTERM to the launcher's group, as a shell's job control does)."""
    launcher = fresh_launcher()
    children = launcher.wait_healthy()
    launcher.signal_group(signal.SIGTERM)
    _assert_clean_stop(launcher, launcher.wait_exit())
    assert set(children) == {"redis", "web", "worker", "beat"}


def test_a_killed_launcher_takes_its_children_with_it(
    fresh_launcher: Callable[[], Launcher],
) -> None:
    """SIGKILL leaves the launcher no chance to stop anything: each child is told by the
    kernel that its parent died, and stops itself."""
    launcher = fresh_launcher()
    launcher.wait_healthy()
    launcher.signal_group(signal.SIGKILL)
    assert launcher.wait_exit() == -signal.SIGKILL
    launcher.wait_all_gone(timeout=60)
