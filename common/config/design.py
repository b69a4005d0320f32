"""``design``: the opt-in design tools (``mockup_render``, ``image_generate``).

The section's presence turns the category on (``design: {}`` takes every default):

- ``mockup_render`` is registered with the section: it draws given HTML/CSS or SVG
  in a headless Chromium inside the category's namespace sandbox, with no network at
  all, bounded by ``mockups``;
- ``image_generate`` only when ``images.connection`` names a configured connection to
  an OpenAI-compatible images API (its operations must include
  ``POST /v1/images/generations``); the agent must be granted that connection, as for
  ``external_data_request``, and the console adds its credential.
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import Field, StrictBool, StrictInt, StrictStr, field_validator, model_validator

from common.config.browser import DEFAULT_CHROMIUM
from common.config.connections import ConnectionOperation, offers_operation
from common.strict import StrictModel

MIB: Final = 1024 * 1024
GENERATIONS_PATH: Final = "/v1/images/generations"
DEFAULT_SIZES: Final = ("1024x1024", "1024x1536", "1536x1024")
_SIZE: Final = re.compile(r"[1-9][0-9]{1,4}x[1-9][0-9]{1,4}")


class MockupSection(StrictModel):
    """``design.mockups``: Chromium, the viewport bounds and the ceilings of one render."""

    chromium_path: StrictStr = DEFAULT_CHROMIUM
    default_width: StrictInt = Field(default=1280, ge=16, le=8192)
    default_height: StrictInt = Field(default=800, ge=16, le=8192)
    max_width: StrictInt = Field(default=2560, ge=16, le=8192)
    max_height: StrictInt = Field(default=2560, ge=16, le=8192)
    max_content_bytes: StrictInt = Field(default=2 * MIB, ge=1024, le=32 * MIB)
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    memory_mb: StrictInt = Field(default=1024, ge=256, le=16384)
    # Chromium's threads count against the sandbox's process ceiling.
    max_processes: StrictInt = Field(default=512, ge=64, le=4096)
    max_blocked_reported: StrictInt = Field(default=50, ge=1, le=1000)

    @field_validator("chromium_path")
    @classmethod
    def _system_path(cls, value: str) -> str:
        # Only read-only system directories are visible inside the sandbox.
        if not value.startswith("/usr/") or "/../" in value:
            raise ValueError("chromium_path must be an absolute path under /usr")
        return value

    @model_validator(mode="after")
    def _defaults_within_bounds(self) -> MockupSection:
        if self.default_width > self.max_width or self.default_height > self.max_height:
            raise ValueError("default_width/default_height must be at most max_width/max_height")
        return self

    @property
    def memory_bytes(self) -> int:
        """The memory one render's browser may use."""
        return self.memory_mb * MIB


class ImageSection(StrictModel):
    """``design.images``: the OpenAI-compatible images API and the bounds of one picture."""

    connection: StrictStr
    """A configured connection whose base URL is the API's root (``/v1/...`` below it)."""
    model: StrictStr = Field(default="gpt-image-1", min_length=1, max_length=100)
    sizes: tuple[StrictStr, ...] = Field(default=DEFAULT_SIZES, min_length=1, max_length=32)
    max_bytes: StrictInt = Field(default=8 * MIB, ge=1024, le=64 * MIB)
    max_pixels: StrictInt = Field(default=16_777_216, ge=256, le=268_435_456)
    max_prompt_chars: StrictInt = Field(default=4000, ge=1, le=32000)
    # Send ``response_format: b64_json``; off for models that always answer base64 and
    # refuse the field.
    request_b64_json: StrictBool = True

    @field_validator("sizes")
    @classmethod
    def _sizes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for size in value:
            if not _SIZE.fullmatch(size):
                raise ValueError(f"size {size!r} must be WIDTHxHEIGHT, e.g. 1024x1024")
        return value


class DesignSection(StrictModel):
    """The ``design`` section."""

    mockups: MockupSection = MockupSection()
    images: ImageSection | None = None


def offers_generations(operations: tuple[ConnectionOperation, ...]) -> bool:
    """True when one of ``operations`` is ``POST /v1/images/generations`` (a pattern that
    matches it counts)."""
    return offers_operation(operations, "POST", GENERATIONS_PATH)
