"""The analytics category is opt-in: no section, no tools; metrics_query only with a
connection to query."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from common.config import SynthOrgConfig
from tools_app.registry import build_catalog

CONNECTION: dict[str, Any] = {
    "name": "prometheus",
    "base_url": "http://127.0.0.1:9090",
    "private_network": True,
    "operations": [{"method": "GET", "path": "/api/v1/query"}],
}
ANALYTICS = {"metrics_query", "chart_render", "report_build"}


def _registered(config: dict[str, Any]) -> set[str]:
    catalog = build_catalog(SynthOrgConfig.model_validate(config), source="test")
    return {contract.name for contract in catalog} & ANALYTICS


def test_the_tools_appear_only_with_their_section() -> None:
    assert _registered({}) == set()
    assert _registered({"analytics": {}}) == {"chart_render", "report_build"}
    assert (
        _registered(
            {"connections": [CONNECTION], "analytics": {"metrics": {"connection": "prometheus"}}}
        )
        == ANALYTICS
    )


def test_metrics_must_name_a_configured_connection() -> None:
    with pytest.raises(ValidationError, match="names no configured connection"):
        SynthOrgConfig.model_validate({"analytics": {"metrics": {"connection": "nowhere"}}})
    # Control: the same section with the connection configured loads.
    SynthOrgConfig.model_validate(
        {"connections": [CONNECTION], "analytics": {"metrics": {"connection": "prometheus"}}}
    )
