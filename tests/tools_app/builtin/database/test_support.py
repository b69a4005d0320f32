"""A scratch PostgreSQL database and SQLite file for the database tool tests.

Both hold the same small table; the PostgreSQL one lives on the test server beside
the console's own database (never in it) and is dropped afterwards.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tools_app.builtin.base import ToolContext
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.protocol import Owner

ROWS = 25
# The test server trusts local connections, so any password works; this one must
# never come back to an agent.
PASSWORD = "Sup3r-Secret-Db-Pw"


def scratch_url(base_url: str, database: str, *, password: str | None = None) -> str:
    parts = urlsplit(base_url)
    user = parts.username or ""
    auth = f"{user}:{password}@" if password else f"{user}@"
    netloc = auth + (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit(("postgresql", netloc, "/" + database, "", ""))


@pytest.fixture(scope="module")
def pg_url(test_env: dict[str, str]) -> Iterator[str]:
    """A scratch database with `items` (25 rows), `trail`, a sequence and a writing function."""
    base = test_env["DATABASE_URL"]
    name = f"sqltools_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = scratch_url(base, name, password=PASSWORD)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, note text)")
        conn.execute(
            "INSERT INTO items SELECT g, 'item ' || g, repeat('x', 50)"
            f" FROM generate_series(1, {ROWS}) g"
        )
        conn.execute("CREATE TABLE trail (id serial PRIMARY KEY, what text)")
        conn.execute("CREATE SEQUENCE counter")
        # A function whose name no list knows, that writes: only the database stops it.
        conn.execute(
            "CREATE FUNCTION sneaky() RETURNS int LANGUAGE sql AS "
            "$$ INSERT INTO trail (what) VALUES ('sneaky'); SELECT 1 $$"
        )
    yield url
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def pg_scalar(url: str, sql: str) -> Any:
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql)
        row = cursor.fetchone() if cursor.description else None
        return row[0] if row else None


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    path = tmp_path / "local.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, note TEXT)")
        conn.executemany(
            "INSERT INTO items VALUES (?, ?, ?)",
            [(i, f"item {i}", "x" * 50) for i in range(1, ROWS + 1)],
        )
        conn.execute("CREATE VIEW first_items AS SELECT * FROM items WHERE id < 5")
    return path


def db_context(settings: Mapping[str, Any], *, agent_name: str = "db-agent") -> ToolContext:
    # The database tools never touch the sandbox; the worker still hands one over.
    return ToolContext(
        agent_id=str(uuid.uuid4()),
        agent_name=agent_name,
        workspace=Path("/nonexistent"),
        sandbox=SubprocessSandbox(),
        owner=Owner(agent_id="db-agent"),
        settings=settings,
    )
