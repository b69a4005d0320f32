"""The multiprocess directory shared by processes of several pid namespaces (containers
of one host sharing a volume): each process keeps its own counts, an exiting process
removes only its own live gauges, and tidying removes what dead processes left, never
a live process's files. Real processes write the files; real pid namespaces give two
of them the same pid."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.multiprocess import MultiProcessCollector

from common.platform.metrics import identity
from common.platform.metrics.process import multiprocess_dir_tidy
from common.testing import BASE_DIR, require, wait_until

# One writer: "named" as the console's processes are, "library" as prometheus_client
# names files by default (the pid), with the cleanup its documentation asks for.
WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    directory, mode = sys.argv[1], sys.argv[2]
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    if mode == "named":
        from common.platform.metrics.process import multiprocess_dir_ensure
        multiprocess_dir_ensure(Path(directory))
    else:
        import atexit
        from prometheus_client import multiprocess
        atexit.register(lambda: multiprocess.mark_process_dead(os.getpid()))
    from prometheus_client import Counter, Gauge
    from common.platform.metrics import identity
    from common.platform.metrics.process import process_metrics_release
    calls = Counter("probe_calls", "Calls.", ["tool"])
    alive = Gauge("probe_alive", "Writers alive.", multiprocess_mode="livesum")

    def name():
        return identity.process_identifier_held() or "-"

    for line in sys.stdin:
        verb, _, arg = line.strip().partition(" ")
        said = ""
        if verb == "inc":
            for _ in range(int(arg)):
                calls.labels(tool="read_file").inc()
        elif verb == "live":
            alive.set(1)
        elif verb == "fork":
            # A child, as a prefork pool makes: its own counts, alive until released.
            read_end, write_end = os.pipe()
            if os.fork() == 0:
                os.close(read_end)
                calls.labels(tool="read_file").inc(int(arg))
                os.write(write_end, name().encode())
                os.close(write_end)
                while not Path(directory + ".release").exists():
                    time.sleep(0.05)
                process_metrics_release()
                os._exit(0)
            os.close(write_end)
            said = " child=" + os.read(read_end, 200).decode()
        elif verb == "exit":
            break
        print("ok", os.getpid(), name() + said, flush=True)
    """
)


class Writer:
    def __init__(self, directory: Path, mode: str, *, own_pid_namespace: bool) -> None:
        argv = [sys.executable, "-c", WRITER, str(directory), mode]
        if own_pid_namespace:
            # Its own pid namespace, as a container's process has: it is pid 1 there.
            user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
            argv = ["unshare", *user, "--pid", "--fork", "--kill-child", *argv]
        self.process = subprocess.Popen(
            argv, cwd=BASE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(BASE_DIR)},
        )  # fmt: skip

    def ask(self, command: str) -> list[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().split()
        assert answer[:1] == ["ok"], (command, answer, self.process.poll())
        return answer[1:]

    def exit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("exit\n")
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=60)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def writers() -> Iterator[list[Writer]]:
    started: list[Writer] = []
    yield started
    for writer in started:
        writer.stop()


def _pid_namespaces_available() -> bool:
    if shutil.which("unshare") is None:
        return False
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    done = subprocess.run(
        ["unshare", *user, "--pid", "--fork", "sh", "-c", "echo $$"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    return done.returncode == 0 and done.stdout.strip() == "1"


def scraped(directory: Path) -> dict[str, float]:
    """What /metrics sums from the directory, by sample name."""
    found: dict[str, float] = {}
    for family in MultiProcessCollector(None, path=str(directory)).collect():
        for sample in family.samples:
            found[sample.name] = found.get(sample.name, 0.0) + sample.value
    return found


def db_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".db"))


def counter_files(directory: Path) -> list[str]:
    return [name for name in db_files(directory) if name.startswith("counter_")]


def _two_pid_ones(tmp_path: Path, mode: str, writers: list[Writer]) -> tuple[Path, Writer, Writer]:
    shared = tmp_path / mode
    shared.mkdir()
    first = Writer(shared, mode, own_pid_namespace=True)
    writers.append(first)
    assert first.ask("inc 1")[0] == "1"
    second = Writer(shared, mode, own_pid_namespace=True)
    writers.append(second)
    assert second.ask("inc 1")[0] == "1"
    return shared, first, second


def test_two_processes_with_one_pid_in_two_namespaces_keep_their_own_counts(
    tmp_path: Path, writers: list[Writer]
) -> None:
    require(_pid_namespaces_available(), "unshare cannot make a pid namespace here")
    shared, first, second = _two_pid_ones(tmp_path, "named", writers)
    first.ask("inc 50")
    second.ask("inc 50")
    assert scraped(shared)["probe_calls_total"] == 102
    names = {first.ask("inc 0")[1], second.ask("inc 0")[1]}
    assert len(names) == 2 and all(n.endswith("-1") for n in names), names
    assert counter_files(shared) == sorted(f"counter_{n}.db" for n in names)

    # Control: named by the pid alone, both write one file and overwrite each other.
    shared, first, second = _two_pid_ones(tmp_path, "library", writers)
    first.ask("inc 50")
    second.ask("inc 50")
    assert counter_files(shared) == ["counter_1.db"]
    assert scraped(shared)["probe_calls_total"] < 102


def test_an_exiting_process_removes_only_its_own_live_gauges(
    tmp_path: Path, writers: list[Writer]
) -> None:
    require(_pid_namespaces_available(), "unshare cannot make a pid namespace here")
    shared, first, second = _two_pid_ones(tmp_path, "named", writers)
    first.ask("live")
    second.ask("live")
    assert scraped(shared)["probe_alive"] == 2
    second.exit()
    assert scraped(shared)["probe_alive"] == 1
    # Its counts stay in the totals after it exits.
    assert scraped(shared)["probe_calls_total"] == 2

    # Control: the library's own cleanup, by pid, removes the other namespace's gauge.
    shared, first, second = _two_pid_ones(tmp_path, "library", writers)
    first.ask("live")
    second.ask("live")
    assert scraped(shared)["probe_alive"] == 1  # one file for both already
    second.exit()
    assert "probe_alive" not in scraped(shared), "the live first writer's gauge is gone"
    assert first.process.poll() is None


def test_tidying_removes_what_dead_processes_left_and_never_a_live_ones_files(
    tmp_path: Path, writers: list[Writer]
) -> None:
    shared = tmp_path / "metrics"
    shared.mkdir()
    live = Writer(shared, "named", own_pid_namespace=False)
    writers.append(live)
    live.ask("inc 3")
    live.ask("live")
    dead = Writer(shared, "named", own_pid_namespace=False)
    writers.append(dead)
    dead_name = dead.ask("inc 4")[1]
    dead.ask("live")
    dead.kill()  # no exit handler ran: its live gauge is still there
    assert f"gauge_livesum_{dead_name}.db" in db_files(shared)
    assert scraped(shared)["probe_alive"] == 2

    tidied = multiprocess_dir_tidy(shared)
    assert (tidied.live, tidied.dead, tidied.removed) == (1, 1, 1)
    # The dead writer's gauge is gone, its counts stay while another writer lives.
    assert f"gauge_livesum_{dead_name}.db" not in db_files(shared)
    assert f"counter_{dead_name}.db" in db_files(shared)
    assert scraped(shared)["probe_alive"] == 1
    assert scraped(shared)["probe_calls_total"] == 7
    # The live writer still writes into the files /metrics reads.
    live.ask("inc 2")
    assert scraped(shared)["probe_calls_total"] == 9

    # Once no writer lives, everything goes: a fresh start, as the library asks.
    live.kill()
    tidied = multiprocess_dir_tidy(shared)
    assert (tidied.live, tidied.dead) == (0, 2)
    assert db_files(shared) == [] and list(shared.iterdir()) == []


def test_a_forked_child_is_a_writer_of_its_own_and_does_not_keep_its_parent_alive(
    tmp_path: Path, writers: list[Writer]
) -> None:
    shared = tmp_path / "metrics"
    shared.mkdir()
    parent = Writer(shared, "named", own_pid_namespace=False)
    writers.append(parent)
    parent.ask("inc 2")
    parent.ask("live")
    answer = parent.ask("fork 3")
    parent_name, child_name = answer[1], answer[2].removeprefix("child=")
    assert child_name not in ("", "-", parent_name), answer
    assert scraped(shared)["probe_calls_total"] == 5
    parent.kill()
    # The child holds its own lock, and its copy of the parent's is closed.
    tidied = multiprocess_dir_tidy(shared)
    assert (tidied.live, tidied.dead) == (1, 1)
    assert f"gauge_livesum_{parent_name}.db" not in db_files(shared)
    assert scraped(shared)["probe_calls_total"] == 5
    Path(f"{shared}.release").touch()
    lock = identity.lock_path(shared, child_name)
    wait_until(lambda: not lock.exists(), timeout=60, what="the child to remove its lock at exit")
    tidied = multiprocess_dir_tidy(shared)
    assert tidied.live == 0 and db_files(shared) == []


def test_a_name_a_live_process_holds_is_never_shared(tmp_path: Path, writers: list[Writer]) -> None:
    shared = tmp_path / "metrics"
    shared.mkdir()
    holder = Writer(shared, "named", own_pid_namespace=False)
    writers.append(holder)
    held = holder.ask("inc 1")[1]
    taken, fd, _ = identity.identifier_claim(shared, held)
    try:
        assert taken != held and taken.startswith(held + "-") and fd is not None
    finally:
        if fd is not None:
            os.close(fd)
    # Control: a name nobody holds is taken as it is.
    free, fd, _ = identity.identifier_claim(shared, "elsewhere-1-7")
    assert free == "elsewhere-1-7" and fd is not None
    os.close(fd)
