"""``make test`` starts its longest test modules first.

xdist (``--dist loadfile``) hands each worker whole modules, and by default it orders
them by their number of tests. That puts the suite's longest modules last (a few tests
each, waiting for people, restarts and timeouts), so a run ended on a tail where one
worker still ran while the others had nothing left. scripts/test.sh passes
``--no-loadscope-reorder``, which keeps the collection order, and loads this plugin
(``-p tests.support.order``), which sorts that order by each module's seconds in a
measured run (``module_seconds.json`` beside this file), longest first. A module not
measured yet counts as long, so a new one starts early rather than ending the run.

``--store-module-seconds`` writes that file from the run it ends (with xdist, the
seconds each module took on its worker, set-up and tear-down included).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

SECONDS_FILE = Path(__file__).with_name("module_seconds.json")
# A module the file does not name yet: placed among the long ones.
UNMEASURED_SECONDS = 60.0

_measured: defaultdict[str, float] = defaultdict(float)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-module-seconds",
        action="store_true",
        help=f"write each module's seconds in this run to {SECONDS_FILE.name}",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process runs every module anyway
    try:
        seconds: dict[str, float] = json.loads(SECONDS_FILE.read_text())
    except (OSError, ValueError):
        return
    # A stable sort: each module's tests stay together and in their order.
    items.sort(key=lambda item: -seconds.get(_module(item.nodeid), UNMEASURED_SECONDS))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[_module(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("store_module_seconds"):
        return
    ordered = sorted(_measured.items(), key=lambda pair: (-pair[1], pair[0]))
    text = json.dumps({module: round(value, 1) for module, value in ordered}, indent=0)
    SECONDS_FILE.write_text(text + "\n")
