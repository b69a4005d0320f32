"""An upstream ``tools/call`` result as the console's ``ToolOutcome`` (raw: sanitised later).

Text blocks are joined; images and audio become a placeholder line in the text and, when
the server returned no structured content, their data under ``content`` of the structured
result; embedded text resources are quoted with their URI; links are named. Everything
beyond ``max_bytes`` (UTF-8 of the text plus the data of binary blocks) is cut and the
outcome flagged ``truncated``. ``isError`` results carry the server's own message.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from tools_app.builtin.base import ToolOutcome

UPSTREAM_ERROR = "upstream_error"


class _Budget:
    def __init__(self, max_bytes: int) -> None:
        self.left = max_bytes
        self.truncated = False

    def take_text(self, text: str) -> str:
        data = text.encode()
        if len(data) <= self.left:
            self.left -= len(data)
            return text
        self.truncated = True
        kept = data[: max(self.left, 0)].decode(errors="ignore")
        self.left = 0
        return kept

    def take_blob(self, size: int) -> bool:
        if size <= self.left:
            self.left -= size
            return True
        self.truncated = True
        return False


def _block(block: Any, budget: _Budget, blobs: list[dict[str, Any]]) -> str:
    if isinstance(block, types.TextContent):
        return budget.take_text(block.text)
    if isinstance(block, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(block, types.ImageContent) else "audio"
        kept = budget.take_blob(len(block.data))
        if kept:
            blobs.append({"type": kind, "mime_type": block.mime_type, "data": block.data})
        note = "" if kept else ", left out: over the output limit"
        return budget.take_text(
            f"[{kind} {block.mime_type}, {len(block.data)} base64 characters{note}]"
        )
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return budget.take_text(f"[resource {resource.uri}]\n{resource.text}")
        kept = budget.take_blob(len(resource.blob))
        if kept:
            blobs.append(
                {"type": "resource", "uri": str(resource.uri), "mime_type": resource.mime_type,
                 "blob": resource.blob}
            )  # fmt: skip
        return budget.take_text(f"[resource {resource.uri}, {resource.mime_type or 'binary'}]")
    if isinstance(block, types.ResourceLink):
        return budget.take_text(f"[resource link {block.uri} {block.name}]")
    return budget.take_text(f"[{getattr(block, 'type', 'unknown')} content]")


def outcome_from_result(
    result: types.CallToolResult, *, max_bytes: int, duration_ms: int | None = None
) -> ToolOutcome:
    """The outcome of one upstream call, capped at ``max_bytes``."""
    budget = _Budget(max_bytes)
    blobs: list[dict[str, Any]] = []
    text = "\n".join(part for block in result.content if (part := _block(block, budget, blobs)))
    structured: dict[str, Any] | None = None
    if isinstance(result.structured_content, dict):
        structured = result.structured_content
    elif result.structured_content is not None:
        # A non-object value (allowed by newer protocol revisions) is shown as text.
        text = (text + "\n" if text else "") + budget.take_text(
            json.dumps(result.structured_content, ensure_ascii=False)
        )
    elif blobs:
        structured = {"content": blobs}
    if result.is_error:
        return ToolOutcome(
            content=text or "the MCP server reported an error without a message",
            is_error=True,
            error_code=UPSTREAM_ERROR,
            truncated=budget.truncated,
            duration_ms=duration_ms,
        )
    return ToolOutcome(
        content=text,
        structured=structured,
        truncated=budget.truncated,
        duration_ms=duration_ms,
    )
