"""Every column a migration since the previous release adds can be left out by a node of
that release, which still inserts rows while both run (the README's "Upgrades"): it is
nullable, or the database itself has its default (``db_default``); Django's ``default``
alone lives in the new code only. Found by the rolling upgrade test, checked here for
every migration so the next one is caught before it runs."""

from __future__ import annotations

import subprocess

from django.db import migrations
from django.db.migrations.loader import MigrationLoader
from django.db.models import NOT_PROVIDED

from common.testing import BASE_DIR
from tests.support.release import PREVIOUS_RELEASE

APPS = ("audit_app", "trust_app", "secrets_app", "tools_app", "notifications_app", "approvals_app")


def _previous_migrations() -> set[tuple[str, str]]:
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", PREVIOUS_RELEASE, "--", *APPS],
        cwd=BASE_DIR, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    found = set()
    for path in listed:
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "migrations" and parts[2][:4].isdigit():
            found.add((parts[0], parts[2].removesuffix(".py")))
    return found


def _problems(previous: set[tuple[str, str]]) -> list[str]:
    loader = MigrationLoader(None, ignore_no_migrations=True)
    problems = []
    for (app, name), migration in sorted(loader.disk_migrations.items()):
        if app not in APPS or (app, name) in previous:
            continue
        for operation in migration.operations:
            if not isinstance(operation, migrations.AddField):
                continue
            field = operation.field
            if field.null or field.db_default is not NOT_PROVIDED:
                continue
            problems.append(f"{app}.{name}: {operation.model_name}.{operation.name}")
    return problems


def test_columns_added_since_the_previous_release_need_nothing_from_its_nodes() -> None:
    previous = _previous_migrations()
    assert ("tools_app", "0001_initial") in previous  # control: the release is read
    assert _problems(previous) == []


def test_control_a_column_with_only_a_python_default_is_found() -> None:
    """The check finds what it looks for: against no previous release at all, the
    initial migrations' own NOT NULL columns without a database default are listed."""
    assert _problems(set())
