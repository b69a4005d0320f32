"""Programs shipped into a sandbox run under a bare ``python3 -I -S``: standard library only.

They live in folders named ``inside/``. A third-party or project import would fail only
inside the sandbox, at the first call that needs it; this finds it at once.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("common", "audit_app", "trust_app", "secrets_app", "tools_app")


def _inside_programs() -> list[Path]:
    found = []
    for package in SOURCE_PACKAGES:
        for folder in (ROOT / package).rglob("inside"):
            if folder.is_dir():
                found += sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
    return found


def _top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names.add("." * node.level + (node.module or ""))
            elif node.module:
                names.add(node.module.split(".")[0])
    return names


PROGRAMS = _inside_programs()


def test_the_known_inside_programs_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in PROGRAMS}
    assert {
        "tools_app/builtin/file_system/inside/runner.py",
        "tools_app/builtin/git/inside/launcher.py",
        "tools_app/sandbox/spawn/inside/server.py",
        "tools_app/sandbox/spawn/inside/confine.py",
        "tools_app/sandbox/spawn/inside/warm.py",
        "tools_app/egress/inside/forwarder.py",
    } <= names


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_an_inside_program_imports_only_the_standard_library(program: Path) -> None:
    foreign = sorted(
        name for name in _top_level_imports(program) if name not in sys.stdlib_module_names
    )
    assert foreign == [], f"{program.relative_to(ROOT)} imports {foreign}"


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_an_inside_program_compiles_under_a_bare_interpreter(program: Path) -> None:
    # As the sandbox runs it: isolated mode, no site packages, no project on the path.
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import sys; compile(sys.stdin.read(), 'p', 'exec')"],
        input=program.read_text(encoding="utf-8"),
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr


def test_the_check_catches_a_foreign_import(tmp_path: Path) -> None:
    # Control: the check is not blind.
    program = tmp_path / "bad.py"
    program.write_text("import os\nimport django\nfrom tools_app import registry\n")
    foreign = sorted(n for n in _top_level_imports(program) if n not in sys.stdlib_module_names)
    assert foreign == ["django", "tools_app"]
