"""The tail of a server's standard error: real processes write to it, the tail keeps the
last lines, sanitised and bounded, and never makes the writer wait."""

from __future__ import annotations

import subprocess
import sys

from tools_app.bridge.stderr import MAX_BYTES, MAX_LINES, StderrTail

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SERVER_VALUE = "server-secret-value-0123456789"


def _tail_of(script: str, *, secrets: tuple[str, ...] = ()) -> str:
    tail = StderrTail()
    tail.redact(secrets)
    process = subprocess.Popen([sys.executable, "-c", script], stderr=tail.open())
    tail.spawned()
    assert process.wait(timeout=120) == 1
    return tail.text(wait_seconds=30)


def test_the_last_lines_are_kept_without_escapes_or_secrets() -> None:
    said = _tail_of(
        "import sys\n"
        "for i in range(500): sys.stderr.write(f'noise line {i}\\n')\n"
        "sys.stderr.write('\\x1b[31mred\\x1b[0m \\x1b]0;title\\x07 done \\x1b[2J\\n')\n"
        f"sys.stderr.write('token {TOKEN} value {SERVER_VALUE}\\n')\n"
        "sys.stderr.write(\"Error: Cannot find module '/opt/app/index.js'\\n\")\n"
        "sys.exit(1)\n",
        secrets=(SERVER_VALUE,),
    )
    lines = said.split("\n")
    assert lines[-1] == "Error: Cannot find module '/opt/app/index.js'"
    assert len(lines) == MAX_LINES and lines[0] == f"noise line {500 - MAX_LINES + 3}"
    assert lines[-3] == "red  done", "the escapes went, the words stayed"
    assert "\x1b" not in said and "\x07" not in said
    assert TOKEN not in said and SERVER_VALUE not in said
    assert "[REDACTED:" in lines[-2]
    # Control: the same line without secrets comes through as written.
    plain = _tail_of("import sys; sys.stderr.write('token none value none\\n'); sys.exit(1)")
    assert plain == "token none value none"


def test_a_flood_never_blocks_the_writer_and_the_tail_stays_bounded() -> None:
    # 40 MiB on standard error: a pipe nobody read would stop the writer after 64 KiB.
    said = _tail_of(
        "import sys\n"
        "line = 'x' * 1023 + '\\n'\n"
        "for _ in range(40 * 1024): sys.stderr.write(line)\n"
        "sys.stderr.write('y' * 10000 + '\\n')\n"
        "sys.stderr.write('the end\\n')\n"
        "sys.exit(1)\n"
    )
    assert len(said.encode()) <= MAX_BYTES
    assert said.endswith("\nthe end")
    assert said.startswith("y"), "the long line is cut from its start, its end kept"


def test_a_tail_never_opened_is_empty() -> None:
    assert StderrTail().text() == ""
