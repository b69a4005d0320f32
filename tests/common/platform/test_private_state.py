"""``traversable_dir``: directories others may pass through, whatever the umask."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.platform.private_state import PRIVATE_UMASK, TRAVERSE_MODE, traversable_dir


@pytest.fixture(autouse=True)
def private_umask() -> Iterator[None]:
    """The launcher's umask, under which every process of the console runs."""
    before = os.umask(PRIVATE_UMASK)
    yield
    os.umask(before)


def _mode(path: Path) -> int:
    """The permission bits (a setgid bit a parent hands down is not the point here)."""
    return path.stat().st_mode & 0o777


def test_the_directory_and_its_missing_parents_are_0711(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    assert traversable_dir(target, parents=True) == target
    for made in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert _mode(made) == TRAVERSE_MODE, made
    # Control: without the helper, the umask leaves a directory closed to others.
    closed = tmp_path / "closed"
    closed.mkdir(mode=TRAVERSE_MODE)
    assert _mode(closed) == 0o700


def test_directories_that_exist_are_left_as_they_are(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir(mode=0o755)
    kept.chmod(0o750)
    traversable_dir(kept / "inner", parents=True)
    assert _mode(kept) == 0o750
    assert _mode(kept / "inner") == TRAVERSE_MODE
    traversable_dir(kept)
    assert _mode(kept) == 0o750
    with pytest.raises(FileExistsError):
        traversable_dir(kept, exist_ok=False)
    # Without parents, a missing parent is an error rather than made.
    with pytest.raises(FileNotFoundError):
        traversable_dir(tmp_path / "missing" / "child")
