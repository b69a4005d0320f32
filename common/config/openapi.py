"""A connection's operations derived from an OpenAPI 3 document (JSON or YAML).

Only what the console enforces is read: each path template under ``paths`` and the
methods of its path item. Each becomes one operation: GET, HEAD and OPTIONS are reads,
the others writes; an ``operationId`` that is a valid operation name names it.
``operation_overrides`` (keyed by operationId or ``METHOD /path``) change an
operation's kind, mark it sensitive, add fields to redact, or switch it off.

The document is read with plain parsing, not a full OpenAPI validator: a schema error
in a request body or a response (which the console never uses) must not stop a
connection from loading, and everything the console does use is checked here, each
problem named with its place in the document.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import yaml

MAX_DOCUMENT_BYTES: Final = 10 * 1024 * 1024
# TRACE echoes the request back (credentials included) and is never offered.
_METHODS: Final = ("get", "head", "options", "post", "put", "patch", "delete")
_READ_METHODS: Final = ("GET", "HEAD", "OPTIONS")
_PATH_ITEM_OTHER_KEYS: Final = frozenset(
    {"summary", "description", "servers", "parameters", "trace"}
)


class OpenApiDocumentError(ValueError):
    """The document cannot give operations; the message names the place and the problem."""


def document_path(file: str, base_dir: Path | None) -> Path:
    """``file`` as given when absolute, else relative to the config file's folder."""
    path = Path(file)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path


def read_document(path: Path) -> Mapping[str, Any]:
    """The parsed document; OpenApiDocumentError when it cannot be read or parsed."""
    try:
        size = path.stat().st_size
        if size > MAX_DOCUMENT_BYTES:
            raise OpenApiDocumentError(
                f"openapi document {path} is {size} bytes; at most {MAX_DOCUMENT_BYTES}"
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OpenApiDocumentError(f"openapi document {path} cannot be read: {exc}") from exc
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise OpenApiDocumentError(
            f"openapi document {path} is neither valid JSON nor YAML: {exc}"
        ) from exc
    if not isinstance(data, Mapping):
        raise OpenApiDocumentError(f"openapi document {path}: the top level must be a mapping")
    version = data.get("openapi")
    if not isinstance(version, str) or not version.startswith("3."):
        raise OpenApiDocumentError(
            f"openapi document {path}: field 'openapi' must name version 3.x "
            f"(found {version!r}; Swagger 2.0 documents must be converted first)"
        )
    return data


def document_operations(data: Mapping[str, Any], *, source: str) -> list[dict[str, Any]]:
    """One ``{method, path, kind, name?}`` per method of each path item, in document
    order; OpenApiDocumentError names the first problem."""
    paths = data.get("paths")
    if not isinstance(paths, Mapping) or not paths:
        raise OpenApiDocumentError(f"openapi document {source}: 'paths' must be a non-empty map")
    operations: list[dict[str, Any]] = []
    for template, item in paths.items():
        where = f"openapi document {source}: paths[{template!r}]"
        if not isinstance(template, str) or not template.startswith("/"):
            raise OpenApiDocumentError(f"{where}: a path must start with '/'")
        if not isinstance(item, Mapping):
            raise OpenApiDocumentError(f"{where}: a path item must be a map")
        if "$ref" in item:
            raise OpenApiDocumentError(
                f"{where}: a path item given by '$ref' is not followed; write it out"
            )
        for key, operation in item.items():
            if key in _PATH_ITEM_OTHER_KEYS or str(key).startswith("x-"):
                continue
            if key not in _METHODS:
                raise OpenApiDocumentError(f"{where}: {key!r} is not an HTTP method")
            if not isinstance(operation, Mapping):
                raise OpenApiDocumentError(f"{where}.{key}: an operation must be a map")
            method = str(key).upper()
            entry: dict[str, Any] = {
                "method": method,
                "path": template,
                "kind": "read" if method in _READ_METHODS else "write",
            }
            operation_id = operation.get("operationId")
            if operation_id is not None:
                entry["operation_id"] = str(operation_id)
            operations.append(entry)
    return operations


def apply_overrides(
    operations: list[dict[str, Any]],
    overrides: Mapping[str, Mapping[str, Any]],
    *,
    source: str,
) -> list[dict[str, Any]]:
    """``operations`` with each override applied (``enabled: false`` drops one); an
    override naming no operation is an error listing what it could name."""
    keyed: dict[str, dict[str, Any]] = {}
    for entry in operations:
        keyed[f"{entry['method']} {entry['path']}"] = entry
        if "operation_id" in entry:
            keyed.setdefault(entry["operation_id"], entry)
    dropped: set[int] = set()
    for key, change in overrides.items():
        found = keyed.get(key) or keyed.get(_normalised_key(key))
        if found is None:
            known = ", ".join(sorted(keyed)[:40])
            raise OpenApiDocumentError(
                f"operation_overrides[{key!r}] names no operation of openapi document "
                f"{source} (give an operationId or 'METHOD /path'; it has: {known})"
            )
        entry = found
        if change.get("enabled", True) is False:
            dropped.add(id(entry))
            continue
        for field in ("kind", "sensitive", "redact", "name"):
            if change.get(field) is not None:
                entry[field] = change[field]
    return [entry for entry in operations if id(entry) not in dropped]


def _normalised_key(key: str) -> str:
    method, _, path = key.strip().partition(" ")
    return f"{method.upper()} {path.strip()}"
