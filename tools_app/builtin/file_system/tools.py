"""The file-system tools: read_file, write_file, edit_file, list_directory, delete_file, stat.

Paths are relative to the agent's workspace (absolute paths anywhere only for
file-system scope ``full``, and never past the always-deny floor). Each call
is checked in the worker first (``fs_paths``), then done by ``fs_runner`` in
the file_system category's sandbox as the unprivileged sandbox user, with the
workspace mounted read-only for reads and read-write for writes.

Settings (``tools.<name>``): ``max_path_length``, ``max_read_bytes``,
``max_write_bytes``, ``max_entries``, ``read_only``, ``denied_paths``,
``timeout_seconds`` (see ``FileSystemSettings``). Sub-constraints: the
agent's ``file_system`` scope (``none`` refuses, ``full`` permits absolute
paths, anything else keeps to the workspace).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any, Final

from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.file_system.contracts import (
    DELETE_FILE,
    EDIT_FILE,
    LIST_DIRECTORY,
    READ_FILE,
    STAT,
    WRITE_FILE,
)
from tools_app.builtin.file_system.execution import (
    FileSystemSettings,
    refuse_when_read_only,
    resolve_path,
    run_operation,
)
from tools_app.contracts import ToolContract
from tools_app.quota.precheck import refuse_write_over_quota

# JSON escaping can grow text up to six times (\uXXXX); room for the envelope.
_JSON_GROWTH = 6
_ENVELOPE_BYTES = 64 * 1024


def _int_argument(arguments: Mapping[str, Any], key: str, *, minimum: int) -> int | None:
    value = arguments.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"{key} must be an integer of at least {minimum}"
        )
    return value


def _text_argument(arguments: Mapping[str, Any], key: str, *, allow_empty: bool = True) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or (not allow_empty and value == ""):
        kind = "a non-empty string" if not allow_empty else "a string"
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"{key} must be {kind}")
    if "\x00" in value and key != "content":
        raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, f"{key} contains a NUL byte")
    return value


def _utf8_size(text: str, key: str) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"{key} contains lone surrogates; send valid Unicode"
        ) from None


def _refuse_over_quota(context: ToolContext, new_bytes: int) -> None:
    """Refuse before writing when the workspace quota would not hold ``new_bytes`` more."""
    refuse_write_over_quota(
        quota_bytes=getattr(context.sandbox, "quota_bytes", None),
        workspace=context.workspace,
        new_bytes=new_bytes,
    )


class ReadFileTool:
    """``read_file``: a UTF-8 text file, or a byte range of it."""

    contract: ToolContract = READ_FILE

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Read the file; binary files are reported, not shown."""
        settings = FileSystemSettings.from_mapping(context.settings)
        path = resolve_path(context, settings, arguments.get("path"))
        offset = _int_argument(arguments, "offset", minimum=0) or 0
        length = _int_argument(arguments, "length", minimum=1)
        if length is not None and length > settings.max_read_bytes:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"length {length} is over the read limit of {settings.max_read_bytes} bytes; "
                "read in smaller ranges with offset and length",
            )
        wanted = length if length is not None else settings.max_read_bytes
        result, duration = run_operation(
            context,
            settings,
            path,
            "read",
            writes=False,
            output_bytes=wanted * _JSON_GROWTH + _ENVELOPE_BYTES,
            offset=offset,
            length=wanted,
        )
        shown = path.display()
        if result.get("binary"):
            structured = {
                "path": shown,
                "binary": True,
                "size": result["size"],
                "offset": result["offset"],
                "content": "",
                "bytes_read": 0,
                "next_offset": None,
                "truncated": False,
            }
            return ToolOutcome(
                content=f"{shown} is a binary file ({result['size']} bytes); not shown",
                structured=structured,
                duration_ms=duration,
            )
        # Cut by the limit rather than by the caller's own length: say so.
        truncated = length is None and result["next_offset"] is not None
        structured = {
            "path": shown,
            "binary": False,
            "size": result["size"],
            "offset": result["offset"],
            "content": result["content"],
            "bytes_read": result["bytes_read"],
            "next_offset": result["next_offset"],
            "truncated": truncated,
        }
        return ToolOutcome(
            content=result["content"],
            structured=structured,
            truncated=truncated,
            duration_ms=duration,
        )


class WriteFileTool:
    """``write_file``: create or replace a text file, atomically."""

    contract: ToolContract = WRITE_FILE

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Write the content to a temporary file beside the target and rename it into place."""
        settings = FileSystemSettings.from_mapping(context.settings)
        refuse_when_read_only(settings, "write_file")
        path = resolve_path(context, settings, arguments.get("path"))
        if path.is_anchor:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "path names the root, not a file")
        content = _text_argument(arguments, "content")
        size = _utf8_size(content, "content")
        if size > settings.max_write_bytes:
            raise ToolRefusedError(
                RefusalCode.LIMIT_EXCEEDED,
                f"content is {size} bytes; the write limit is {settings.max_write_bytes}",
            )
        _refuse_over_quota(context, size)
        result, duration = run_operation(
            context,
            settings,
            path,
            "write",
            writes=True,
            content=content,
            overwrite=arguments.get("overwrite", True) is not False,
            create_parents=arguments.get("create_parents", True) is not False,
        )
        verb = "created" if result["created"] else "replaced"
        structured = {"path": path.display(), **result}
        return ToolOutcome(
            content=f"{verb} {path.display()} ({result['bytes_written']} bytes)",
            structured=structured,
            duration_ms=duration,
        )


class EditFileTool:
    """``edit_file``: replace an exact string, exactly as many times as asked."""

    contract: ToolContract = EDIT_FILE

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Replace ``old_string`` by ``new_string``; fail when the match count differs."""
        settings = FileSystemSettings.from_mapping(context.settings)
        refuse_when_read_only(settings, "edit_file")
        path = resolve_path(context, settings, arguments.get("path"))
        old = _text_argument(arguments, "old_string", allow_empty=False)
        new = _text_argument(arguments, "new_string")
        if old == new:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "old_string and new_string are the same"
            )
        expected = _int_argument(arguments, "expected_replacements", minimum=1) or 1
        growth = _utf8_size(new, "new_string") - _utf8_size(old, "old_string")
        _refuse_over_quota(context, max(0, growth) * expected)
        result, duration = run_operation(
            context,
            settings,
            path,
            "edit",
            writes=True,
            old_string=old,
            new_string=new,
            expected_replacements=expected,
            max_bytes=settings.max_write_bytes,
        )
        structured = {"path": path.display(), **result}
        return ToolOutcome(
            content=f"replaced {result['replacements']} occurrence(s) in {path.display()}",
            structured=structured,
            duration_ms=duration,
        )


class ListDirectoryTool:
    """``list_directory``: names, kinds and sizes in one directory."""

    contract: ToolContract = LIST_DIRECTORY

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """List up to ``max_entries`` entries, sorted by name."""
        settings = FileSystemSettings.from_mapping(context.settings)
        path = resolve_path(context, settings, arguments.get("path", "."))
        limit = settings.max_entries
        requested = _int_argument(arguments, "max_entries", minimum=1)
        if requested is not None:
            limit = min(limit, requested)
        result, duration = run_operation(
            context,
            settings,
            path,
            "list",
            writes=False,
            output_bytes=limit * 512 + _ENVELOPE_BYTES,
            max_entries=limit,
        )
        lines = [f"{e['name']}{'/' if e['type'] == 'directory' else ''}" for e in result["entries"]]
        if result["truncated"]:
            lines.append(f"… {result['total'] - len(result['entries'])} more entries not shown")
        structured = {
            "path": path.display(),
            "entries": result["entries"],
            "total": result["total"],
            "truncated": result["truncated"],
        }
        return ToolOutcome(
            content="\n".join(lines),
            structured=structured,
            truncated=result["truncated"],
            duration_ms=duration,
        )


class DeleteFileTool:
    """``delete_file``: a file or link; a directory only with ``recursive: true``."""

    contract: ToolContract = DELETE_FILE

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Delete the entry itself (a symlink is removed, never its target)."""
        settings = FileSystemSettings.from_mapping(context.settings)
        refuse_when_read_only(settings, "delete_file")
        path = resolve_path(context, settings, arguments.get("path"))
        if path.is_anchor:
            raise ToolRefusedError(
                RefusalCode.PATH_NOT_REACHABLE,
                f"{path.display()!r} is the {'workspace' if path.anchor == 'workspace' else 'root'}"
                " itself and is never deleted",
            )
        recursive = arguments.get("recursive", False)
        if not isinstance(recursive, bool):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "recursive must be the literal true or false"
            )
        result, duration = run_operation(
            context, settings, path, "delete", writes=True, recursive=recursive
        )
        structured = {"path": path.display(), **result}
        return ToolOutcome(
            content=f"deleted {result['deleted']} {path.display()}",
            structured=structured,
            duration_ms=duration,
        )


class StatTool:
    """``stat``: what a path is, without following a final symlink."""

    contract: ToolContract = STAT

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Report kind, size, permissions and modification time."""
        settings = FileSystemSettings.from_mapping(context.settings)
        path = resolve_path(context, settings, arguments.get("path"))
        result, duration = run_operation(context, settings, path, "stat", writes=False)
        modified = dt.datetime.fromtimestamp(float(result["modified"]), tz=dt.UTC)
        structured = {
            "path": path.display(),
            "type": result["type"],
            "size": result["size"],
            "mode": result["mode"],
            "modified": modified.isoformat(),
            "links": result["links"],
        }
        return ToolOutcome(
            content=f"{path.display()}: {result['type']}, {result['size']} bytes, "
            f"mode {result['mode']}, modified {structured['modified']}",
            structured=structured,
            duration_ms=duration,
        )


read_file: Final = ReadFileTool()
write_file: Final = WriteFileTool()
edit_file: Final = EditFileTool()
list_directory: Final = ListDirectoryTool()
delete_file: Final = DeleteFileTool()
stat: Final = StatTool()

TOOLS: Final = (read_file, write_file, edit_file, list_directory, delete_file, stat)
