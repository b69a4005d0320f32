"""The design category is opt-in: no section, no tools; image_generate only with a
provider (``design.images`` naming a connection to an images API)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from common.config import SynthOrgConfig
from tools_app.registry import build_catalog

GENERATIONS = {"method": "POST", "path": "/v1/images/generations"}
DESIGN = {"mockup_render", "image_generate"}


def _connection(*operations: dict[str, str]) -> dict[str, Any]:
    return {
        "name": "images",
        "base_url": "http://127.0.0.1:8089",
        "private_network": True,
        "operations": list(operations),
    }


def _registered(config: dict[str, Any]) -> set[str]:
    catalog = build_catalog(SynthOrgConfig.model_validate(config), source="test")
    return {contract.name for contract in catalog} & DESIGN


def test_the_tools_appear_only_with_their_section_and_provider() -> None:
    assert _registered({}) == set()
    assert _registered({"design": {}}) == {"mockup_render"}
    with_provider = {
        "connections": [_connection(GENERATIONS)],
        "design": {"images": {"connection": "images"}},
    }
    assert _registered(with_provider) == DESIGN
    # A connection alone is not a provider.
    assert _registered({"connections": [_connection(GENERATIONS)], "design": {}}) == {
        "mockup_render"
    }


def test_images_must_name_a_connection_that_can_generate() -> None:
    with pytest.raises(ValidationError, match="names no configured connection"):
        SynthOrgConfig.model_validate({"design": {"images": {"connection": "nowhere"}}})
    read_only = {"method": "GET", "path": "/v1/models"}
    with pytest.raises(ValidationError, match="no operation POST /v1/images/generations"):
        SynthOrgConfig.model_validate(
            {
                "connections": [_connection(read_only)],
                "design": {"images": {"connection": "images"}},
            }
        )
    # Control: a pattern that covers the generations path counts.
    SynthOrgConfig.model_validate(
        {
            "connections": [_connection({"method": "POST", "path": "/v1/images/*"})],
            "design": {"images": {"connection": "images"}},
        }
    )


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"mockups": {"max_width": 9000}}, "max_width"),
        ({"mockups": {"default_width": 3000, "max_width": 2000}}, "default_width"),
        ({"mockups": {"chromium_path": "/tmp/chromium"}}, "chromium_path"),
        ({"mockups": {"timeout": 5}}, "timeout"),
        ({"images": {"connection": "images", "sizes": ["big"]}}, "WIDTHxHEIGHT"),
        ({"images": {"connection": "images", "max_bytes": 10}}, "max_bytes"),
    ],
)
def test_settings_are_checked_at_load(section: dict[str, Any], field: str) -> None:
    config = {"connections": [_connection(GENERATIONS)], "design": section}
    with pytest.raises(ValidationError, match=field):
        SynthOrgConfig.model_validate(config)


def test_per_tool_settings_are_checked_at_load() -> None:
    from common.config import ConfigError

    config = SynthOrgConfig.model_validate(
        {"design": {}, "tools": {"mockup_render": {"timeout_seconds": 5, "viewport": 3}}}
    )
    with pytest.raises(ConfigError, match=r"tools\.mockup_render\.viewport"):
        build_catalog(config, source="test")
    # Control: the common switches alone load.
    build_catalog(
        SynthOrgConfig.model_validate(
            {"design": {}, "tools": {"mockup_render": {"timeout_seconds": 5}}}
        ),
        source="test",
    )
