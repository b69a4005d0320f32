"""The launcher's signal plumbing and the mode it leaves for manage.py."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.platform import runtime
from synthorg_site.launcher.stop_signals import STOP_SIGNALS, StopSignals


@pytest.fixture
def signals() -> Iterator[StopSignals]:
    """StopSignals in this process, the previous handlers put back after the test."""
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    installed = StopSignals()
    try:
        yield installed
    finally:
        signal.set_wakeup_fd(-1)
        for signum, handler in before.items():
            signal.signal(signum, handler)


def test_no_signal_means_no_stop(signals: StopSignals) -> None:
    assert signals.wait(0.05) is False
    assert signals.received == []


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_each_stop_signal_wakes_the_main_loop_and_is_named(
    signals: StopSignals, signum: int
) -> None:
    os.kill(os.getpid(), signum)
    assert signals.wait(5) is True
    assert signals.received == [signum]


def test_a_second_signal_is_told_apart_from_the_first(signals: StopSignals) -> None:
    os.kill(os.getpid(), signal.SIGINT)
    assert signals.wait(5)
    seen = signals.count()
    assert signals.wait_beyond(seen, 0.05) is False
    os.kill(os.getpid(), signal.SIGINT)
    assert signals.wait_beyond(seen, 5) is True


@pytest.fixture
def var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SYNTHORG_VAR_DIR", str(tmp_path / "var"))
    return tmp_path / "var"


def test_the_launchers_mode_is_remembered_in_var(
    var: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert runtime.remembered_mode() is None
    monkeypatch.setenv("SYNTHORG_ENV", "dev")
    runtime.remember_mode()
    assert (var / "run-mode").read_text() == "dev\n"
    assert runtime.remembered_mode() == "dev"


def test_a_mangled_mode_file_is_ignored(var: Path) -> None:
    var.mkdir(parents=True)
    (var / "run-mode").write_text("debug-everything\n")
    assert runtime.remembered_mode() is None


def test_only_a_second_ctrl_c_counts_as_hurry(signals: StopSignals) -> None:
    """A repeated SIGTERM (group kill, then make) is not a person's second Ctrl-C."""
    os.kill(os.getpid(), signal.SIGTERM)
    assert signals.wait(5)
    seen = signals.count()
    os.kill(os.getpid(), signal.SIGTERM)
    assert signals.wait_beyond(seen, 5)  # it is seen as a further signal ...
    assert signals.wait_beyond(seen, 0.05, only=signal.SIGINT) is False  # ... not a hurry
    os.kill(os.getpid(), signal.SIGINT)
    assert signals.wait_beyond(seen, 5, only=signal.SIGINT) is True
