"""Shared by the benchmarks: percentiles, one printed row, CPU used by a process tree."""

from __future__ import annotations

import os
import statistics
from pathlib import Path


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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
