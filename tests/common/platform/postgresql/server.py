"""The test PostgreSQL server, as scripts/test.sh starts it."""

from __future__ import annotations

import os

import pytest


def conninfo() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.fail("scripts/test.sh starts PostgreSQL and sets DATABASE_URL")
    return url.replace("postgres://", "postgresql://", 1)
