"""PURE: the difference between a pinned and a held definition, as lines a person reads.

Both are printed as indented JSON with every non-ASCII character escaped, so a
zero-width space or a Cyrillic letter in a name shows as ``\\u200b`` or ``\\u0435``
instead of hiding in the diff.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

LineKind = Literal["same", "removed", "added", "hunk"]


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str


def readable_definition(definition: Any) -> str:
    """A definition as indented JSON, keys sorted, invisible characters made visible."""
    if definition is None:
        return ""
    return json.dumps(definition, indent=2, sort_keys=True, ensure_ascii=True)


def definition_diff(old: Any, new: Any, *, context: int = 3) -> list[DiffLine]:
    """Unified diff lines from ``old`` (pinned; None if never accepted) to ``new``."""
    before = readable_definition(old).splitlines()
    after = readable_definition(new).splitlines()
    lines: list[DiffLine] = []
    for line in difflib.unified_diff(before, after, lineterm="", n=context):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.append(DiffLine("hunk", line))
        elif line.startswith("-"):
            lines.append(DiffLine("removed", line[1:]))
        elif line.startswith("+"):
            lines.append(DiffLine("added", line[1:]))
        else:
            lines.append(DiffLine("same", line[1:]))
    return lines
