"""Audit exports as CSV and JSON Lines, produced a batch of rows at a time.

Rows come from a database iterator in chunks and leave as encoded batches, so the
serving process holds one batch at a time however large the export. Under ASGI the
batches are fetched with ``sync_to_async`` on the request's own thread: a plain
generator would make Django buffer the whole body before sending it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Iterable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

from tools_app.selectors_audit import EXPORT_COLUMNS, AuditFilters, audit_export_rows

BATCH_ROWS = 2000
CSV_HEADER = (*EXPORT_COLUMNS, "data")

# Text a spreadsheet would run as a formula; such cells get a leading apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_TEXT_COLUMNS = tuple(
    i
    for i, name in enumerate(CSV_HEADER)
    if name in {"kind", "actor_name", "agent_name", "tool", "rule", "reason", "data"}
)
_CREATED_AT = EXPORT_COLUMNS.index("created_at")
_UUID_COLUMNS = tuple(
    i for i, name in enumerate(EXPORT_COLUMNS) if name in {"agent_id", "invocation_id"}
)


def _batches(rows: Iterator[tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    while batch := list(islice(rows, BATCH_ROWS)):
        yield batch


def _csv_row(row: tuple[Any, ...]) -> list[Any]:
    cells = list(row)
    created: datetime = cells[_CREATED_AT]
    cells[_CREATED_AT] = created.isoformat()
    for i in _TEXT_COLUMNS:
        value = cells[i]
        if value and value.startswith(_FORMULA_STARTS):
            cells[i] = "'" + value
    return cells


def csv_lines(filters: AuditFilters) -> Iterator[bytes]:
    """The CSV export: a header, then one line per event, newest first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    yield buffer.getvalue().encode()
    for batch in _batches(audit_export_rows(filters)):
        buffer.seek(0)
        buffer.truncate()
        writer.writerows(_csv_row(row) for row in batch)
        yield buffer.getvalue().encode()


def _jsonl_line(row: tuple[Any, ...]) -> str:
    record = dict(zip(EXPORT_COLUMNS, row, strict=False))
    record["created_at"] = row[_CREATED_AT].isoformat()
    for i in _UUID_COLUMNS:
        if row[i] is not None:
            record[EXPORT_COLUMNS[i]] = str(row[i])
    # `data` is already JSON text from the database: splice it in rather than decode it.
    head = json.dumps(record, ensure_ascii=False)
    return f'{head[:-1]}, "data": {row[-1] or "{}"}}}\n'


def jsonl_lines(filters: AuditFilters) -> Iterator[bytes]:
    """The JSON Lines export: one object per event, newest first."""
    for batch in _batches(audit_export_rows(filters)):
        yield "".join(_jsonl_line(row) for row in batch).encode()


def _next_or_none(chunks: Iterator[bytes]) -> bytes | None:
    return next(chunks, None)


async def _async_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    fetch = sync_to_async(_next_or_none, thread_sensitive=True)
    close = sync_to_async(getattr(chunks, "close", lambda: None), thread_sensitive=True)
    try:
        while (chunk := await fetch(chunks)) is not None:
            yield chunk
    finally:
        # Close the database cursor on the thread that opened it, also on disconnect.
        await close()


def streamed(
    request: HttpRequest, chunks: Iterator[bytes]
) -> Iterable[bytes] | AsyncIterator[bytes]:
    """`chunks` in the form the serving handler streams without buffering."""
    if isinstance(request, ASGIRequest):
        return _async_chunks(chunks)
    return chunks
