"""Run every bench/bench_*.py and print one table.

Each benchmark is a script that prints one JSON object per figure on stdout:
{"figure": str, "unit": str, "p50": float, "p95": float, "p99": float, "rate": float,
 "note": str} (any of p50/p95/p99/rate may be missing). `make bench` starts PostgreSQL,
Redis and Docker first (scripts/test.sh bench) and migrates the database here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
BASE_DIR = BENCH_DIR.parent
COLUMNS = ("figure", "unit", "p50", "p95", "p99", "rate", "note")


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if value < 100 else f"{value:,.1f}"
    return "" if value is None else str(value)


def _revision() -> str:
    found = subprocess.run(
        ["git", "describe", "--always", "--dirty"], cwd=BASE_DIR, capture_output=True, text=True
    )
    return found.stdout.strip() or "unknown"


def _write_markdown(table: list[list[str]], cores: int | None, only: list[str]) -> Path:
    """The table as Markdown in $SYNTHORG_BENCH_DIR (default var/bench/): latest.md, and a
    dated copy, so runs can be compared."""
    out = Path(os.environ.get("SYNTHORG_BENCH_DIR") or BASE_DIR / "var" / "bench")
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    lines = [
        f"# SynthOrg Console benchmarks, {stamp}",
        "",
        f"Revision {_revision()}, {cores} cores"
        + (f", only {', '.join(only)}" if only else "")
        + ".",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join("---" for _ in COLUMNS) + "|",
        *("| " + " | ".join(cell.replace("|", "\\|") for cell in r) + " |" for r in table),
        "",
    ]
    text = "\n".join(lines)
    (out / f"bench-{stamp}.md").write_text(text)
    latest = out / "latest.md"
    latest.write_text(text)
    return latest


def main() -> int:
    only = sys.argv[1:]
    env = dict(os.environ)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=BASE_DIR,
        env=env,
        check=True,
    )
    rows: list[dict[str, object]] = []
    failed: list[str] = []
    for script in sorted(BENCH_DIR.glob("bench_*.py")):
        if only and script.stem not in only and script.stem.removeprefix("bench_") not in only:
            continue
        started = time.monotonic()
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        result = subprocess.run(
            [sys.executable, str(script)], cwd=BASE_DIR, env=env, capture_output=True, text=True
        )
        if result.returncode != 0:
            failed.append(script.name)
            print(result.stdout[-2000:], result.stderr[-4000:], file=sys.stderr)
            continue
        for line in result.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                row = json.loads(line)
                row.setdefault("note", "")
                rows.append(row)
        print(f"  done in {time.monotonic() - started:.1f}s", file=sys.stderr)

    cores = os.cpu_count()
    table = [[_cell(row.get(col)) for col in COLUMNS] for row in rows]
    widths = [
        max(len(col), *(len(r[i]) for r in table)) if table else len(col)
        for i, col in enumerate(COLUMNS)
    ]
    print(f"SynthOrg Console benchmarks on {cores} cores")
    print("  ".join(col.ljust(w) for col, w in zip(COLUMNS, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    written = _write_markdown(table, cores, only)
    print(f"table written to {written}")
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
