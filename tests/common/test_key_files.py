"""Key files under var/: private, atomic, first writer wins."""

from __future__ import annotations

import stat
from pathlib import Path

from common.platform.key_files import ensure_key_file, read_key_lines, write_key_lines


def test_written_private_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "var" / "keys"
    write_key_lines(path, ["b", "a"], exclusive=False)
    assert read_key_lines(path) == ["b", "a"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["keys"]  # no temporary file left


def test_exclusive_keeps_the_first_file(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    write_key_lines(path, ["first"], exclusive=True)
    write_key_lines(path, ["second"], exclusive=True)
    assert read_key_lines(path) == ["first"]
    write_key_lines(path, ["third"], exclusive=False)
    assert read_key_lines(path) == ["third"]
    assert [p.name for p in tmp_path.iterdir()] == ["keys"]


def test_ensure_makes_lines_only_when_missing(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    made: list[int] = []

    def make() -> list[str]:
        made.append(1)
        return ["k"]

    ensure_key_file(path, make)
    ensure_key_file(path, make)
    assert read_key_lines(path) == ["k"]
    assert made == [1]
