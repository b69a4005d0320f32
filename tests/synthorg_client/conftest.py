"""Fixtures: a stand-in console on loopback speaking the agent API contract."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The client is its own distribution. Until it is installed into this
# environment, import it from its source tree; once installed this is a no-op.
_SOURCE = Path(__file__).resolve().parents[2] / "synthorg_client" / "src"
_spec = importlib.util.find_spec("synthorg_client")
if _spec is None or _spec.origin is None:
    sys.modules.pop("synthorg_client", None)
    sys.path.insert(0, str(_SOURCE))

from tests.synthorg_client.console import FakeConsole, serving  # noqa: E402


@pytest.fixture
def console() -> Iterator[FakeConsole]:
    """A fresh stand-in console listening on 127.0.0.1."""
    with serving(FakeConsole()) as running:
        yield running


@pytest.fixture
def client_source() -> Path:
    """Where the client's package lives, for child processes."""
    import synthorg_client

    return Path(synthorg_client.__file__).resolve().parents[1]
