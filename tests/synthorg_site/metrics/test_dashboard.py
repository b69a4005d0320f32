"""The Grafana dashboard in deploy/ asks only for metrics the console exports."""

from __future__ import annotations

import json
import re

from common.platform.metrics.instruments import _instruments
from common.testing import BASE_DIR
from synthorg_site.metrics.state import ConsoleStateCollector

DASHBOARD = BASE_DIR / "deploy" / "grafana" / "synthorg-console.json"
SUFFIXES = ("_total", "_bucket", "_count", "_sum")


def exported_names() -> set[str]:
    names = {metric._name for metric in _instruments().values()}
    names |= {family.name for family in ConsoleStateCollector().collect()}
    return names


def base_name(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name.removesuffix(suffix)
    return name


def test_every_panel_queries_an_exported_metric(db: None) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    assert exprs
    asked = {base_name(n) for e in exprs for n in re.findall(r"synthorg_[a-z_]+", e)}
    exported = exported_names()
    assert asked <= exported, asked - exported
    # Every exported metric has a panel.
    assert exported <= asked, exported - asked
