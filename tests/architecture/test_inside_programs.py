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


# A few programs draw with Debian's own packages (python3-matplotlib, python3-jinja2),
# which the sandbox shows read-only: they load them by name through their
# ``system_module("name", "debian-package")``, never from the console's virtualenv.
SYSTEM_PYTHON = "/usr/bin/python3"
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"


def _loaded_by_name(path: Path) -> tuple[set[str], set[str]]:
    """The modules ``path`` loads through ``system_module(...)`` and through
    ``importlib.import_module(...)``, by their top-level names."""
    declared, loaded = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "system_module":
            declared.add(first.value.split(".")[0])
        elif isinstance(func, ast.Attribute) and func.attr == "import_module":
            loaded.add(first.value.split(".")[0])
    return declared, loaded


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_module_loaded_by_name_is_standard_or_a_declared_system_package(program: Path) -> None:
    declared, loaded = _loaded_by_name(program)
    foreign = sorted(loaded - declared - set(sys.stdlib_module_names))
    assert foreign == [], f"{program.relative_to(ROOT)} loads {foreign} without declaring them"
    for name in sorted(declared):
        # As the sandbox loads it: the system's interpreter, bare, with only Debian's
        # packages added (scripts/require.sh installs them where the console runs).
        done = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-S", "-c",
             f"import sys; sys.path.append({SYSTEM_PACKAGES!r}); import {name}"],
            capture_output=True, text=True, timeout=60, cwd="/",
        )  # fmt: skip
        assert done.returncode == 0, f"{program.relative_to(ROOT)} needs {name}: {done.stderr}"


def test_the_check_catches_a_module_loaded_by_name_undeclared(tmp_path: Path) -> None:
    # Control: loading a package by name does not slip past the check.
    program = tmp_path / "sly.py"
    program.write_text(
        "import importlib\n"
        "def f():\n"
        "    system_module('jinja2', 'python3-jinja2')\n"
        "    importlib.import_module('jinja2.sandbox')\n"
        "    importlib.import_module('django.conf')\n"
    )
    declared, loaded = _loaded_by_name(program)
    assert declared == {"jinja2"}
    assert sorted(loaded - declared - set(sys.stdlib_module_names)) == ["django"]
