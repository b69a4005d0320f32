"""Audit exports as CSV and JSON Lines, produced a batch of rows at a time.

On PostgreSQL the database writes the lines itself: ``COPY (SELECT ...) TO STDOUT``
streams them already encoded, and they leave in chunks of about COPY_CHUNK_BYTES with no
per-row work in Python. Elsewhere (SQLite) rows come from an ORM iterator in chunks and
are encoded here. Both give the same bytes for the same rows, and the serving process
holds one chunk at a time however large the export. Under ASGI the chunks are fetched
with ``sync_to_async`` on the request's own thread: a plain generator would make Django
buffer the whole body before sending it.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator, Generator, Iterable, Iterator
from datetime import datetime
from itertools import islice
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import connection, transaction
from django.http import HttpRequest

from audit_app.selectors.events import (
    EXPORT_COLUMNS,
    AuditFilters,
    audit_events,
    audit_export_rows,
)

BATCH_ROWS = 2000
COPY_CHUNK_BYTES = 256 * 1024
CSV_HEADER = (*EXPORT_COLUMNS, "data")

# Text a spreadsheet would run as a formula; such cells get a leading apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Every column but those whose type cannot hold such text (numbers, a timestamp, UUIDs):
# a column added later is guarded unless it is one of these.
_TYPED_COLUMNS = frozenset({"id", "created_at", "duration_ms", "agent_id", "invocation_id"})
_FORMULA_GUARDED = frozenset(CSV_HEADER) - _TYPED_COLUMNS
_TEXT_COLUMNS = tuple(i for i, name in enumerate(CSV_HEADER) if name in _FORMULA_GUARDED)
_CREATED_AT = EXPORT_COLUMNS.index("created_at")
_UUID_COLUMNS = tuple(
    i for i, name in enumerate(EXPORT_COLUMNS) if name in {"agent_id", "invocation_id"}
)


def csv_lines(filters: AuditFilters) -> Iterator[bytes]:
    """The CSV export: a header, then one line per event, newest first."""
    if connection.vendor == "postgresql":
        return csv_lines_copied(filters)
    return csv_lines_encoded(filters)


def jsonl_lines(filters: AuditFilters) -> Iterator[bytes]:
    """The JSON Lines export: one object per event, newest first."""
    if connection.vendor == "postgresql":
        return jsonl_lines_copied(filters)
    return jsonl_lines_encoded(filters)


# --- Any database: ORM rows, encoded here.


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


def csv_lines_encoded(filters: AuditFilters) -> Iterator[bytes]:
    """The CSV export encoded by the csv module from ORM rows."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    # The csv module quotes a cell holding the line terminator but not a lone "\r", which
    # readers take for the end of a row: such rows are written with "\r\n" as terminator
    # (so "\r" is quoted too, as COPY quotes it), then ended with "\n" like the others.
    spare = io.StringIO()
    carriage_writer = csv.writer(spare, lineterminator="\r\n")
    writer.writerow(CSV_HEADER)
    yield buffer.getvalue().encode()
    for batch in _batches(audit_export_rows(filters)):
        buffer.seek(0)
        buffer.truncate()
        for row in batch:
            cells = _csv_row(row)
            if any(isinstance(cell, str) and "\r" in cell for cell in cells):
                spare.seek(0)
                spare.truncate()
                carriage_writer.writerow(cells)
                buffer.write(spare.getvalue()[:-2] + "\n")
            else:
                writer.writerow(cells)
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


def jsonl_lines_encoded(filters: AuditFilters) -> Iterator[bytes]:
    """The JSON Lines export encoded by the json module from ORM rows."""
    for batch in _batches(audit_export_rows(filters)):
        yield "".join(_jsonl_line(row) for row in batch).encode()


# --- PostgreSQL: COPY writes each line, byte for byte what the encoders above write.

# isoformat() of a UTC datetime: the microseconds only when there are some.
_CREATED_AT_SQL = (
    "CASE WHEN date_trunc('second', e.created_at) = e.created_at"
    " THEN to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"+00:00\"')"
    " ELSE to_char(e.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"+00:00\"')"
    " END"
)
_UNQUOTED_COLUMNS = _TYPED_COLUMNS - {"created_at"}


def _csv_cell_sql(name: str) -> str:
    """One CSV cell as SQL.

    Empty text becomes NULL: COPY writes NULL as nothing but quotes an empty string,
    where the csv module writes nothing for both.
    """
    if name == "created_at":
        return _CREATED_AT_SQL
    if name in _UNQUOTED_COLUMNS:
        return f"e.{name}"
    value = "e.data::text" if name == "data" else f"e.{name}"
    if name in _FORMULA_GUARDED:
        return (
            f"CASE WHEN left({value}, 1) IN ('=', '+', '-', '@', chr(9), chr(13))"
            f" THEN '''' || {value} ELSE NULLIF({value}, '') END"
        )
    return f"NULLIF({value}, '')"


def _jsonl_record_sql() -> str:
    """One JSON Lines record as SQL: keys, order and spacing as json.dumps writes them.

    to_json escapes strings as json.dumps(ensure_ascii=False) does (quote, backslash and
    control characters only); `data` is spliced in as the database's JSON text.
    """
    parts = []
    for i, name in enumerate(EXPORT_COLUMNS):
        value = _CREATED_AT_SQL if name == "created_at" else f"e.{name}"
        key = ("{" if i == 0 else ", ") + json.dumps(name) + ": "
        parts.append(f"'{key}' || COALESCE(to_json({value})::text, 'null')")
    parts.append("', \"data\": ' || COALESCE(e.data::text, '{}') || '}'")
    return " || ".join(parts)


def _export_select(filters: AuditFilters, columns_sql: str) -> tuple[str, list[Any]]:
    """A SELECT of `columns_sql` over the filtered events, newest first, and its parameters."""
    events = audit_events(filters).order_by().values_list(*EXPORT_COLUMNS, "data")
    inner_sql, params = events.query.sql_with_params()
    # Only constants and the ORM's own SQL are spliced; the filter values stay parameters.
    select = f"SELECT {columns_sql} FROM ({inner_sql}) AS e ORDER BY e.id DESC"  # noqa: S608
    return select, list(params)


def _copied(statement: str, params: list[Any]) -> Generator[bytes, None, None]:
    """What a COPY ... TO STDOUT writes, in chunks of about COPY_CHUNK_BYTES.

    COPY sends one message per row; joining them keeps the hops to the event loop few.
    Closed early (the client went away), the COPY is cancelled; the savepoint keeps an
    enclosing transaction usable after that.
    """
    with (
        transaction.atomic(),
        connection.cursor() as cursor,
        cursor.cursor.copy(statement, params) as copy,
    ):
        chunk = bytearray()
        for row in copy:
            chunk += row
            if len(chunk) >= COPY_CHUNK_BYTES:
                yield bytes(chunk)
                chunk.clear()
        if chunk:
            yield bytes(chunk)


def csv_lines_copied(filters: AuditFilters) -> Generator[bytes, None, None]:
    """The CSV export written by PostgreSQL's COPY (the header has no character to quote)."""
    yield (",".join(CSV_HEADER) + "\n").encode()
    select, params = _export_select(filters, ", ".join(map(_csv_cell_sql, CSV_HEADER)))
    yield from _copied(f"COPY ({select}) TO STDOUT (FORMAT csv)", params)


def jsonl_lines_copied(filters: AuditFilters) -> Generator[bytes, None, None]:
    """The JSON Lines export written by PostgreSQL's COPY.

    In CSV format with control characters as quote and delimiter, COPY writes a single
    text column as it is unless it holds one of them or a line break, which JSON text
    never holds raw (it escapes them), so every record leaves untouched.
    """
    select, params = _export_select(filters, _jsonl_record_sql())
    options = "FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02'"
    yield from _copied(f"COPY ({select}) TO STDOUT ({options})", params)


# --- Serving.


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
