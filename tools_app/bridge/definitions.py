"""PURE: an upstream MCP tool as its server defines it, and the hash that pins it.

A tool reaches agents as ``<server>__<tool>``; its definition (title, description,
input and output schemas, annotations) is hashed over its canonical JSON, so any
change of wording, schema or hints gives another hash and can be held for review.
Of a pinned definition, agents are also given the title and an ``openWorldHint: false``
as the server wrote them (``server_words``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from common.canonical import canonical_json

SEPARATOR = "__"
CATEGORY = "mcp"


def contract_name(server: str, tool: str) -> str:
    """The name agents see for upstream tool ``tool`` of ``server``."""
    return f"{server}{SEPARATOR}{tool}"


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else MappingProxyType(dict(value))


@dataclass(frozen=True)
class UpstreamTool:
    """One tool as an upstream server listed it (``tools/list``)."""

    server: str
    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] = field(default_factory=dict)
    title: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "input_schema", _frozen(self.input_schema))
        object.__setattr__(self, "output_schema", _frozen(self.output_schema))
        object.__setattr__(self, "annotations", _frozen(self.annotations))

    @property
    def contract_name(self) -> str:
        return contract_name(self.server, self.name)

    def definition(self) -> dict[str, Any]:
        """Everything that pins the tool, as plain JSON."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "input_schema": _plain(self.input_schema),
            "output_schema": _plain(self.output_schema),
            "annotations": _plain(self.annotations),
        }

    def definition_hash(self) -> str:
        """SHA-256 (hex) of the canonical JSON of ``definition()``."""
        return hashlib.sha256(canonical_json(self.definition()).encode()).hexdigest()


@dataclass(frozen=True)
class ServerWords:
    """What agents are told of an upstream tool in its server's own words.

    The title, as the server gave it; and ``closed_world`` when the server says its tool
    reaches no open world (``openWorldHint: false``). Neither decides anything: the
    console's classification (``classify``) decides what a call needs.
    """

    title: str | None = None
    closed_world: bool = False


def server_words(definition: Mapping[str, Any] | None) -> ServerWords:
    """The words of ``definition`` (``UpstreamTool.definition()``) passed on to agents."""
    if not definition:
        return ServerWords()
    title = definition.get("title")
    annotations = definition.get("annotations")
    claims = annotations if isinstance(annotations, Mapping) else {}
    return ServerWords(
        title=title if isinstance(title, str) and title else None,
        closed_world=claims.get("openWorldHint") is False,
    )


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
