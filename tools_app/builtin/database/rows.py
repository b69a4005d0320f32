"""PURE: query results as JSON-safe rows, with the limits that make them safe to return."""

from __future__ import annotations

import datetime
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

# Rows fetched from a cursor per round while a result streams.
FETCH_BATCH: Final = 100
DEFAULT_MAX_RESULT_BYTES: Final = 8 * 1024 * 1024


class StatementTimeoutError(Exception):
    """The statement ran past its timeout and was cancelled."""


class QueryMemoryExceededError(Exception):
    """The statement needed more memory than it may use."""


class RowCursor(Protocol):
    """What both engines' cursors offer for streaming a result."""

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class QueryResult:
    """Column names, rows as lists, and whether rows or cells were cut at a limit."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    cells_truncated: bool = False
    row_count: int | None = None  # rows affected, for a mutation

    def as_dict(self, connection: str) -> dict[str, Any]:
        found: dict[str, Any] = {
            "connection": connection,
            "columns": self.columns,
            "rows": self.rows,
            "row_count": self.row_count if self.row_count is not None else len(self.rows),
            "truncated": self.truncated,
            "cells_truncated": self.cells_truncated,
        }
        return found

    def as_text(self) -> str:
        """Tab-separated text for the agent's content channel, a header line first."""
        lines = ["\t".join(self.columns)] if self.columns else []
        lines.extend("\t".join("NULL" if v is None else str(v) for v in row) for row in self.rows)
        if self.truncated:
            lines.append(f"… more rows: only the first {len(self.rows)} are returned")
        if not lines:
            lines.append(f"{self.row_count or 0} rows affected")
        return "\n".join(lines)


@dataclass
class CellLimiter:
    """Converts values to JSON-safe cells, cutting text longer than ``max_chars``."""

    max_chars: int
    cut: bool = field(default=False)

    def _text(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        self.cut = True
        return text[: self.max_chars] + "…"

    def cell(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else str(value)
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return self._text("\\x" + bytes(value).hex())
        if isinstance(value, decimal.Decimal | uuid.UUID):
            return str(value)
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
        if isinstance(value, datetime.timedelta):
            return str(value)
        try:
            return self._text(json.dumps(value, default=str, ensure_ascii=False))
        except (TypeError, ValueError):
            return self._text(str(value))

    def rows(self, rows: Iterable[Sequence[Any]]) -> list[list[Any]]:
        return [[self.cell(v) for v in row] for row in rows]


def _cell_size(cell: Any) -> int:
    return len(cell) if isinstance(cell, str) else 8


def streamed_result(
    cursor: RowCursor,
    columns: list[str],
    *,
    max_rows: int,
    max_cell_chars: int,
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
) -> QueryResult:
    """Rows fetched a batch at a time, each cut as it arrives, until a limit is reached.

    Only one batch of raw rows is held at once, so a result of many wide rows never
    sits whole in memory; the result stops (``truncated``) at ``max_rows`` rows or
    when its cells add up to more than ``max_result_bytes`` characters.
    """
    limiter = CellLimiter(max_cell_chars)
    rows: list[list[Any]] = []
    size = 0
    while True:
        batch = cursor.fetchmany(min(FETCH_BATCH, max_rows + 1 - len(rows)))
        if not batch:
            return QueryResult(columns, rows, truncated=False, cells_truncated=limiter.cut)
        for raw in batch:
            if len(rows) == max_rows:
                return QueryResult(columns, rows, truncated=True, cells_truncated=limiter.cut)
            row = [limiter.cell(v) for v in raw]
            size += sum(_cell_size(c) for c in row)
            if size > max_result_bytes:
                return QueryResult(columns, rows, truncated=True, cells_truncated=limiter.cut)
            rows.append(row)


def limited_result(
    columns: list[str], fetched: Sequence[Sequence[Any]], *, max_rows: int, max_cell_chars: int
) -> QueryResult:
    """``fetched`` holds at most ``max_rows + 1`` rows: one more means there were more."""
    limiter = CellLimiter(max_cell_chars)
    rows = limiter.rows(fetched[:max_rows])
    return QueryResult(
        columns=columns,
        rows=rows,
        truncated=len(fetched) > max_rows,
        cells_truncated=limiter.cut,
    )
