"""Loopback servers for the guard tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools_app.net.servers import LoopbackHttpServer


@pytest.fixture
def web() -> Iterator[LoopbackHttpServer]:
    """An HTTP server on 127.0.0.1 (reached through an explicit allowlist entry)."""
    with LoopbackHttpServer("127.0.0.1") as server:
        yield server


@pytest.fixture
def private_web() -> Iterator[LoopbackHttpServer]:
    """An HTTP server on 127.0.0.2 that no test allowlists: it must never be reached."""
    with LoopbackHttpServer("127.0.0.2") as server:
        yield server
