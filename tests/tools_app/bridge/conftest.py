"""Fixtures the bridge's tests share: an agent, and a workspace the sandbox user may
read and write."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tools_app.sandbox.conftest import make_workspace
from trust_app.models import Agent


@pytest.fixture
def agent() -> Agent:
    name = f"bridge-agent-{uuid.uuid4().hex[:8]}"
    return Agent.objects.create(name=name, access_level="standard", workspace=f"/tmp/{name}")


@pytest.fixture
def workspace() -> Iterator[Path]:
    path = make_workspace(writable=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
