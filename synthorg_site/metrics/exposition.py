"""The text of one scrape: every process's counters summed, plus the console's state."""

from __future__ import annotations

import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

from synthorg_site.metrics.state import ConsoleStateCollector

CONTENT_TYPE = CONTENT_TYPE_LATEST


def scrape() -> bytes:
    """Prometheus text exposition of the whole console as this node sees it."""
    # A registry per scrape, as the library's multiprocess mode asks: the
    # collector reads the directory's files each time.
    registry = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(registry, path=os.environ["PROMETHEUS_MULTIPROC_DIR"])
    registry.register(ConsoleStateCollector())
    return generate_latest(registry)
