"""An upstream ``tools/call`` result as the console's ``ToolOutcome`` (raw: sanitised later).

Text blocks are joined; images and audio become a placeholder line in the text and, when
the server returned no structured content, their data under ``content`` of the structured
result; embedded text resources are quoted with their URI; links are named. Everything
beyond ``max_bytes`` (UTF-8 of the text plus the data of binary blocks) is cut and the
outcome flagged ``truncated``. ``isError`` results carry the server's own message, and
its structured content too (a server may say in it what went wrong).

A text (or a text resource) that is a JSON document is read as data: JSON spells an
escape or an invisible character as ``\\u001b``, which the text sanitiser cannot see but
the agent's JSON parser turns back into the character. Its strings, keys included, are
stripped like a structured result's (``sanitize_structure``) and the document is written
again; a document with nothing to strip is kept exactly as the server wrote it. So is
one JSON document per line (JSON Lines). The structured content is kept as the server
sent it and sanitised with every structured result before an agent sees it.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from tools_app.builtin.base import ToolOutcome
from tools_app.sanitize import sanitize_structure
from tools_app.sanitize.controls import strip_invisible

UPSTREAM_ERROR = "upstream_error"


# The first character of a JSON text worth reading: an object, an array or a string (a
# number, a boolean or null holds nothing to strip).
_JSON_STARTS = ("{", "[", '"')


def _dumps(clean: Any, indent: int | None) -> str:
    # Characters beyond ASCII as themselves, so the text sanitiser sees every one of them.
    text = json.dumps(clean, ensure_ascii=False, indent=indent)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: written as an escape, as JSON allows
        text = json.dumps(clean, indent=indent)
    return text


def _json_text(value: Any) -> str:
    """``value`` as JSON text, its strings and keys stripped of escapes and invisible
    characters."""
    return _dumps(sanitize_structure(value, shapes=False).value, None)


def _parsed(text: str) -> tuple[bool, Any]:
    if not text.lstrip().startswith(_JSON_STARTS):
        return False, None
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _clean_document(text: str) -> str | None:
    """``text`` cleaned when it is one JSON document holding something to strip, ``text``
    itself when it holds nothing, None when it is no JSON document.

    A text that becomes a document only once stripped (a zero-width character or an
    escape before its first brace) is read as one: the sanitiser would make it one.
    """
    found, value = _parsed(text)
    if not found:
        visible = strip_invisible(text)[0]
        if visible == text:
            return None
        found, value = _parsed(visible)
        if not found:
            return None
    cleaned = sanitize_structure(value, shapes=False)
    if cleaned.stripped_chars == 0 and cleaned.renamed_keys == 0:
        return text
    # Written again in the server's layout as far as it matters: indented or on one line.
    return _dumps(cleaned.value, 2 if "\n" in text.strip() else None)


def clean_json_text(text: str) -> str:
    """An upstream text read as data: a JSON document, or JSON Lines, with escapes and
    invisible characters taken out of its strings; any other text as it was."""
    whole = _clean_document(text)
    if whole is not None:
        return whole
    if "\n" not in text or ("{" not in text and "[" not in text):
        return text
    lines = text.split("\n")
    cleaned = [_clean_document(line) or line for line in lines]
    return text if cleaned == lines else "\n".join(cleaned)


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
        return budget.take_text(clean_json_text(block.text))
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
            return budget.take_text(f"[resource {resource.uri}]\n{clean_json_text(resource.text)}")
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
            _json_text(result.structured_content)
        )
    elif blobs:
        structured = {"content": blobs}
    if result.is_error:
        return ToolOutcome(
            content=text or "the MCP server reported an error without a message",
            structured=structured,
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
