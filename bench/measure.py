"""Shared by the benchmarks: percentiles, timed runs, one printed row, CPU of a process tree.

Two percentile rules are in use, each kept as the figures it produced were: ``pct``
(nearest rank, rounded) and ``lower_pct`` (the rank below ``q * n``), plus the
interpolated cut points of ``statistics.quantiles`` in ``quantile_row``.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def lower_pct(samples: list[float], q: float) -> float:
    """The sample at rank ``int(q * n)`` of the sorted samples."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def lower_pct_3(samples: list[float], q: float) -> float:
    """``lower_pct`` rounded to three decimals."""
    return round(lower_pct(samples, q), 3)


def timed_ms(action: Callable[[], object]) -> float:
    """Milliseconds one call of ``action`` took."""
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def time_runs(
    action: Callable[[], object], runs: int, *, warmup: int, budget_seconds: float
) -> list[float]:
    """Milliseconds per run after ``warmup`` runs, stopping early past the time budget."""
    for _ in range(warmup):
        action()
    samples: list[float] = []
    end = time.monotonic() + budget_seconds
    for _ in range(runs):
        samples.append(timed_ms(action))
        if time.monotonic() > end:
            break
    return samples


def wall_and_cpu_ms(call: Callable[[], object], runs: int) -> tuple[list[float], float]:
    """Wall times of ``runs`` calls after one warm call, and their median CPU time (steadier
    on a shared machine)."""
    call()
    gc.collect()
    times, cpu = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        call()
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return times, statistics.median(cpu)


def quantile_row(figure: str, times: list[float], note: str) -> dict[str, object]:
    """A row in ms whose p95 and p99 are ``statistics.quantiles`` cut points."""
    cuts = statistics.quantiles(times, n=100)
    return {
        "figure": figure,
        "unit": "ms",
        "p50": statistics.median(times),
        "p95": cuts[94],
        "p99": cuts[98],
        "note": note,
    }


def print_cpu_figure(name: str, measured: tuple[list[float], float], note: str) -> None:
    """Print the ``quantile_row`` of ``wall_and_cpu_ms``'s times, its CPU median in the note."""
    times, cpu = measured
    print(json.dumps(quantile_row(name, times, f"{note}; CPU p50 {cpu:.1f} ms")))


def p50_p95_row(figure: str, samples: list[float], note: str) -> dict[str, object]:
    """A row in ms with ``lower_pct_3`` at 0.5 and 0.95."""
    return {
        "figure": figure,
        "unit": "ms",
        "p50": lower_pct_3(samples, 0.5),
        "p95": lower_pct_3(samples, 0.95),
        "note": note,
    }


def emit_row(row: dict[str, object]) -> None:
    """Print one row as a JSON line, flushed (run.py reads the lines as they come)."""
    print(json.dumps(row), flush=True)


def ms_row(figure: str, samples: list[float], note: str) -> dict[str, object]:
    """``row`` in milliseconds."""
    return row(figure, "ms", samples, note)


def row(figure: str, unit: str, samples: list[float], note: str) -> dict[str, object]:
    return {
        "figure": figure,
        "unit": unit,
        "p50": statistics.median(samples),
        "p95": pct(samples, 0.95),
        "p99": pct(samples, 0.99),
        "note": note,
    }


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by a process and every process under it (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        # after the command: state ppid ... utime(12) stime(13) cutime(14) cstime(15)
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = sum(int(v) for v in fields[11:15]) / tick
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(used.get(pid, 0.0) for pid in tree)


def cpu_of(pids: list[int]) -> float:
    return sum(tree_cpu_seconds(pid) for pid in pids)
