"""The design tools: ``mockup_render`` with a ``design`` section, ``image_generate`` only
when ``design.images`` configures its provider.

Each gets its picture from an ``ImageProvider`` (``providers``) and answers where it
is kept and its SHA-256; an MCP client also receives the picture itself
(``tools_app.mcp.pictures``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from common.config import SynthOrgConfig
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.base import RefusalCode, ToolContext, ToolOutcome, ToolRefusedError
from tools_app.builtin.design.mockups import (
    MockupProvider,
    mockup_content,
    mockup_viewport,
    record_mockup,
)
from tools_app.builtin.design.openai_images import ACTION_TYPE as IMAGE_ACTION_TYPE
from tools_app.builtin.design.openai_images import OpenAIImagesProvider, generations_call
from tools_app.builtin.design.providers import ImageProvider, design_section
from tools_app.builtin.external_data.tool import external_data_request
from tools_app.contracts import ToolContract, ToolExample
from trust_app.policy import Decision

_SHA256: Final = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
_SIZE_PATTERN: Final = "^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$"
MAX_CONTENT_CHARS: Final = 32 * 1024 * 1024


def design_offered(config: SynthOrgConfig) -> bool:
    """The category is on only when the config has a ``design`` section."""
    return config.design is not None


def image_provider(config: SynthOrgConfig) -> ImageProvider | None:
    """The provider ``image_generate`` uses, or None when none is configured."""
    if config.design is None or config.design.images is None:
        return None
    return OpenAIImagesProvider(config.design.images)


class MockupRenderTool:
    """``mockup_render``: HTML/CSS or SVG drawn as a PNG, with no network at all."""

    contract = ToolContract(
        name="mockup_render",
        category=ToolCategory.DESIGN,
        action_type="docs:write",
        safety_class=SafetyClass.WRITE,
        cost_tier="medium",
        summary="Draw an HTML/CSS or SVG mockup as a PNG in the workspace.",
        description=(
            "Draws `html` (a whole page with its CSS inline) or `svg` in a headless Chromium "
            "inside the sandbox at `viewport` (CSS pixels) and saves a PNG under "
            "`.synthorg/mockups/`; returns its path, SHA-256, width and height. The mockup "
            "has no network and runs no scripts: everything it shows must be inline (data: "
            "URLs included). Any stylesheet, image, font or frame it tries to fetch is blocked "
            "and listed in `blocked_requests`."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "html": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS},
                "svg": {"type": "string", "minLength": 1, "maxLength": MAX_CONTENT_CHARS},
                "viewport": {
                    "type": "object",
                    "properties": {
                        "width": {"type": "integer", "minimum": 16, "maximum": 8192},
                        "height": {"type": "integer", "minimum": 16, "maximum": 8192},
                    },
                    "required": ["width", "height"],
                    "additionalProperties": False,
                },
            },
            "oneOf": [{"required": ["html"]}, {"required": ["svg"]}],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "sha256": _SHA256,
                "width": {"type": "integer"},
                "height": {"type": "integer"},
                "blocked_requests": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "url": {"type": "string"},
                            "resource_type": {"type": "string"},
                        },
                        "required": ["url", "resource_type"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["path", "sha256", "width", "height", "blocked_requests"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="A sign-in card, 400x300.",
                arguments={
                    "html": "<body style='margin:0;background:#eef'><form style='padding:24px'>"
                    "<h1>Sign in</h1><input placeholder='Email'></form></body>",
                    "viewport": {"width": 400, "height": 300},
                },
                result={
                    "path": ".synthorg/mockups/20250101T000000Z-0123456789ab.png",
                    "sha256": "0123456789ab" + "0" * 52,
                    "width": 400,
                    "height": 300,
                    "blocked_requests": [],
                },
            ),
        ),
        failure_modes=(
            "INVALID_ARGUMENT: neither or both of html and svg.",
            "LIMIT_EXCEEDED: the content or the viewport is over design.mockups' limits.",
            "TIMED_OUT: the mockup was not drawn within design.mockups.timeout_seconds.",
            "BROWSER_UNAVAILABLE: Chromium is not installed where the sandbox runs.",
        ),
    )
    offered = staticmethod(design_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the content and viewport, draw the mockup in the sandbox, keep the PNG."""
        section = design_section().mockups
        kind, content = mockup_content(section, arguments)
        viewport = mockup_viewport(section, arguments.get("viewport"))
        picture = MockupProvider(section).produce(
            context, {"kind": kind, "content": content, "viewport": viewport}
        )
        blocked = list(picture.details.get("blocked_requests", []))
        record_mockup(context, kind=kind, viewport=viewport, picture=picture)
        structured = {
            "path": picture.path,
            "sha256": picture.sha256,
            "width": picture.width,
            "height": picture.height,
            "blocked_requests": blocked,
        }
        note = ""
        if blocked:
            shown = ", ".join(item["url"] for item in blocked[:5])
            note = f"; {len(blocked)} request(s) blocked (the mockup has no network): {shown}"
        return ToolOutcome(
            content=f"mockup ({kind}) saved to {picture.path} ({picture.width}x"
            f"{picture.height}, sha256 {picture.sha256}){note}",
            structured=structured,
            duration_ms=picture.details.get("duration_ms"),
        )


class ImageGenerateTool:
    """``image_generate``: one picture from a prompt, by the configured images API."""

    contract = ToolContract(
        name="image_generate",
        category=ToolCategory.DESIGN,
        action_type=IMAGE_ACTION_TYPE,
        safety_class=SafetyClass.NETWORK,
        idempotency="required",
        cost_tier="high",
        summary="Generate a picture from a text prompt and save it in the workspace.",
        description=(
            "Sends `prompt` to the organisation's image generation API (an OpenAI-compatible "
            "images API configured by an admin; its host and credential are the console's) "
            "and saves the picture under `.synthorg/images/`; returns its path, SHA-256, "
            "media type, width, height and size. `size` must be one the admin allowed. The "
            "prompt leaves the organisation: never put secrets or personal data in it."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "minLength": 1, "maxLength": 32000},
                "size": {"type": "string", "pattern": _SIZE_PATTERN},
            },
            "required": ["prompt", "size"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "sha256": _SHA256,
                "media_type": {"type": "string", "enum": ["image/png", "image/jpeg", "image/webp"]},
                "width": {"type": "integer"},
                "height": {"type": "integer"},
                "bytes": {"type": "integer"},
                "revised_prompt": {"type": ["string", "null"]},
            },
            "required": ["path", "sha256", "media_type", "width", "height", "bytes"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="A square illustration for a landing page.",
                arguments={
                    "prompt": "a lighthouse at dusk, flat illustration",
                    "size": "1024x1024",
                },
                result={
                    "path": ".synthorg/images/20250101T000000Z-0123456789ab.png",
                    "sha256": "0123456789ab" + "0" * 52,
                    "media_type": "image/png",
                    "width": 1024,
                    "height": 1024,
                    "bytes": 1234567,
                    "revised_prompt": None,
                },
            ),
        ),
        failure_modes=(
            "HOST_NOT_ALLOWED: the images connection is not granted to you, or you have no "
            "network access.",
            "INVALID_ARGUMENT: a size the admin did not allow (the reason lists them).",
            "LIMIT_EXCEEDED: the prompt is too long, or the connection's rate or concurrency "
            "limit is reached.",
            "PROVIDER_ERROR: the images API refused the request (its words are given).",
            "NOT_AN_IMAGE / IMAGE_TOO_LARGE / RESPONSE_TOO_LARGE / URL_NOT_ALLOWED: the answer "
            "was not a PNG, JPEG or WebP within the limits, or linked elsewhere; nothing kept.",
        ),
    )

    @staticmethod
    def offered(config: SynthOrgConfig) -> bool:
        """Registered only when an image provider is configured (``design.images``)."""
        return image_provider(config) is not None

    def gate(
        self,
        *,
        arguments: Mapping[str, Any],
        sub_constraints: Mapping[str, Any],
        decision: Decision,
    ) -> Decision | None:
        """At decision time: the connection's grant and operation, judged exactly as
        ``external_data_request`` judges a POST of the generations path (a write asks a
        person unless the admin declared the operation a read)."""
        images = design_section().images
        if images is None:
            return None
        return external_data_request.gate(
            arguments=generations_call(images),
            sub_constraints=sub_constraints,
            decision=decision,
        )

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Check the prompt and size, ask the provider, keep the picture."""
        images = design_section().images
        provider = image_provider(synthorg_config())
        if images is None or provider is None:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "image_generate is off: no design.images provider"
            )
        prompt, size = arguments.get("prompt"), arguments.get("size")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "prompt must be a non-empty string"
            )
        if len(prompt) > images.max_prompt_chars:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"prompt is {len(prompt)} characters; the limit is {images.max_prompt_chars}",
            )
        if size not in images.sizes:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT,
                f"size {str(size)[:20]!r} is not allowed; allowed: {', '.join(images.sizes)}",
            )
        picture = provider.produce(context, {"prompt": prompt, "size": size})
        structured = {
            "path": picture.path,
            "sha256": picture.sha256,
            "media_type": picture.media_type,
            "width": picture.width,
            "height": picture.height,
            "bytes": picture.bytes or 0,
            "revised_prompt": picture.details.get("revised_prompt"),
        }
        return ToolOutcome(
            content=f"picture ({picture.media_type}, {picture.width}x{picture.height}) saved to "
            f"{picture.path} (sha256 {picture.sha256})",
            structured=structured,
        )


mockup_render: Final = MockupRenderTool()
image_generate: Final = ImageGenerateTool()

TOOLS: Final = (mockup_render, image_generate)
