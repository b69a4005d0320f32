"""PURE: the typed contracts of the file-system tools.

Action types: reads (``read_file``, ``list_directory``, ``stat``) are
``code:read``; ``write_file`` is ``code:write`` (it may also create, and the
riskier type is declared); ``edit_file`` ``code:write``; ``delete_file``
``code:delete``. Every path argument has the ``path`` role, so the decision
engine checks it against the agent's file-system scope before the tool runs.
"""

from __future__ import annotations

from typing import Any, Final

from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.contracts import ToolContract
from trust_app.policy.tool_view import ArgumentRole

_PATH: Final[dict[str, Any]] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 4096,
    "description": "Path relative to the workspace, such as src/app.py.",
}
_ROLES: Final = {"path": ArgumentRole.PATH}
_REFUSALS: Final = (
    "PATH_NOT_REACHABLE: the path leaves the workspace, is always denied (credentials), "
    "goes through a symlink that points out, or names a device or other special file.",
    "INVALID_ARGUMENT: the path is malformed (NUL, control characters, too long).",
)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


READ_FILE: Final = ToolContract(
    name="read_file",
    category=ToolCategory.FILE_SYSTEM,
    action_type="code:read",
    safety_class=SafetyClass.READ,
    summary="Read a text file in the workspace, whole or a byte range of it.",
    description=(
        "Reads a UTF-8 text file. Without `length` at most the configured read limit is "
        "returned and `next_offset` says where to continue. Binary files are reported with "
        "`binary: true` and no content. Offsets and lengths count bytes."
    ),
    input_schema=_object(
        {
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 0, "default": 0},
            "length": {"type": "integer", "minimum": 1},
        },
        ["path"],
    ),
    output_schema=_object(
        {
            "path": {"type": "string"},
            "binary": {"type": "boolean"},
            "size": {"type": "integer"},
            "offset": {"type": "integer"},
            "content": {"type": "string"},
            "bytes_read": {"type": "integer"},
            "next_offset": {"type": ["integer", "null"]},
            "truncated": {"type": "boolean"},
        },
        ["path", "binary", "size", "content", "next_offset", "truncated"],
    ),
    failure_modes=(
        *_REFUSALS,
        "LIMIT_EXCEEDED: length is over the read limit.",
        "NOT_FOUND: the file does not exist.",
    ),
    argument_roles=_ROLES,
)

WRITE_FILE: Final = ToolContract(
    name="write_file",
    category=ToolCategory.FILE_SYSTEM,
    action_type="code:write",
    safety_class=SafetyClass.WRITE,
    idempotency="required",
    summary="Create or replace a text file in the workspace.",
    description=(
        "Writes UTF-8 text, replacing the file atomically (a reader never sees half a "
        "file; a symlink or hard link in its place is replaced, not written through). "
        "Missing parent directories are created unless `create_parents` is false; with "
        "`overwrite: false` an existing file is left alone and the call fails."
    ),
    input_schema=_object(
        {
            "path": _PATH,
            "content": {"type": "string"},
            "overwrite": {"type": "boolean", "default": True},
            "create_parents": {"type": "boolean", "default": True},
        },
        ["path", "content"],
    ),
    output_schema=_object(
        {
            "path": {"type": "string"},
            "bytes_written": {"type": "integer"},
            "created": {"type": "boolean"},
        },
        ["path", "bytes_written", "created"],
    ),
    failure_modes=(
        *_REFUSALS,
        "PATH_NOT_REACHABLE: the file tools are in read-only mode.",
        "LIMIT_EXCEEDED: the content is over the write limit.",
        "ALREADY_EXISTS: overwrite is false and the file exists.",
    ),
    argument_roles=_ROLES,
)

EDIT_FILE: Final = ToolContract(
    name="edit_file",
    category=ToolCategory.FILE_SYSTEM,
    action_type="code:write",
    safety_class=SafetyClass.WRITE,
    idempotency="required",
    summary="Replace an exact piece of text in a file in the workspace.",
    description=(
        "Replaces every occurrence of `old_string` by `new_string`, but only when the "
        "number of occurrences is exactly `expected_replacements` (default 1); otherwise "
        "nothing changes and the call fails with the count found. Matching is exact: "
        "whitespace and case count."
    ),
    input_schema=_object(
        {
            "path": _PATH,
            "old_string": {"type": "string", "minLength": 1},
            "new_string": {"type": "string"},
            "expected_replacements": {"type": "integer", "minimum": 1, "default": 1},
        },
        ["path", "old_string", "new_string"],
    ),
    output_schema=_object(
        {
            "path": {"type": "string"},
            "replacements": {"type": "integer"},
            "size": {"type": "integer"},
        },
        ["path", "replacements", "size"],
    ),
    failure_modes=(
        *_REFUSALS,
        "MATCH_COUNT_MISMATCH: old_string occurs a different number of times than expected.",
        "BINARY_FILE: the file is not UTF-8 text.",
    ),
    argument_roles=_ROLES,
)

LIST_DIRECTORY: Final = ToolContract(
    name="list_directory",
    category=ToolCategory.FILE_SYSTEM,
    action_type="code:read",
    safety_class=SafetyClass.READ,
    summary="List the entries of a directory in the workspace.",
    description=(
        "Lists names, kinds (file, directory, symlink, ...) and sizes, sorted by name, up "
        "to the configured entry limit; `truncated` and `total` say when more exist. "
        "Always-denied entries (credentials) are left out."
    ),
    input_schema=_object(
        {
            "path": {**_PATH, "default": "."},
            "max_entries": {"type": "integer", "minimum": 1},
        },
        [],
    ),
    output_schema=_object(
        {
            "path": {"type": "string"},
            "entries": {
                "type": "array",
                "items": _object(
                    {
                        "name": {"type": "string"},
                        "type": {"type": "string"},
                        "size": {"type": "integer"},
                    },
                    ["name", "type", "size"],
                ),
            },
            "total": {"type": "integer"},
            "truncated": {"type": "boolean"},
        },
        ["path", "entries", "total", "truncated"],
    ),
    failure_modes=(*_REFUSALS, "NOT_FOUND: the directory does not exist."),
    argument_roles=_ROLES,
)

DELETE_FILE: Final = ToolContract(
    name="delete_file",
    category=ToolCategory.FILE_SYSTEM,
    action_type="code:delete",
    safety_class=SafetyClass.WRITE,
    idempotency="required",
    summary="Delete a file, or a directory with recursive: true, in the workspace.",
    description=(
        "Deletes one entry. A symlink is removed itself, never what it points to. A "
        "directory is deleted, with everything in it, only when `recursive` is the literal "
        "true. The workspace root is never deleted."
    ),
    input_schema=_object(
        {"path": _PATH, "recursive": {"type": "boolean", "default": False}},
        ["path"],
    ),
    output_schema=_object(
        {"path": {"type": "string"}, "deleted": {"type": "string"}},
        ["path", "deleted"],
    ),
    failure_modes=(
        *_REFUSALS,
        "PATH_NOT_REACHABLE: the path is the workspace root, or read-only mode is on.",
        "INVALID_ARGUMENT: the path is a directory and recursive is not true.",
    ),
    argument_roles=_ROLES,
)

STAT: Final = ToolContract(
    name="stat",
    category=ToolCategory.FILE_SYSTEM,
    action_type="code:read",
    safety_class=SafetyClass.READ,
    summary="Describe a path in the workspace: kind, size, permissions, modification time.",
    description=("Reports on the entry itself: a symlink is reported as a symlink, not followed."),
    input_schema=_object({"path": _PATH}, ["path"]),
    output_schema=_object(
        {
            "path": {"type": "string"},
            "type": {"type": "string"},
            "size": {"type": "integer"},
            "mode": {"type": "string"},
            "modified": {"type": "string"},
            "links": {"type": "integer"},
        },
        ["path", "type", "size", "mode", "modified"],
    ),
    failure_modes=(*_REFUSALS, "NOT_FOUND: nothing exists at the path."),
    argument_roles=_ROLES,
)
