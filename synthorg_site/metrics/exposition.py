"""The text of one scrape: every process's counters summed, plus the console's state."""

from __future__ import annotations

import os
from collections.abc import Iterable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from synthorg_site.metrics.state import ConsoleStateCollector

CONTENT_TYPE = CONTENT_TYPE_LATEST
READ_TRIES = 3


class ProcessFilesCollector(MultiProcessCollector):
    """The library's collector, read again when a file goes between listing the
    directory and reading it (a starting process tidies what dead ones left)."""

    def collect(self) -> Iterable[Metric]:
        for attempt in range(READ_TRIES):
            try:
                return list(super().collect())
            except FileNotFoundError:
                if attempt == READ_TRIES - 1:
                    raise
        return []


def scrape() -> bytes:
    """Prometheus text exposition of the whole console as this node sees it."""
    # A registry per scrape, as the library's multiprocess mode asks: the
    # collector reads the directory's files each time.
    registry = CollectorRegistry(auto_describe=False)
    ProcessFilesCollector(registry, path=os.environ["PROMETHEUS_MULTIPROC_DIR"])
    registry.register(ConsoleStateCollector())
    return generate_latest(registry)
