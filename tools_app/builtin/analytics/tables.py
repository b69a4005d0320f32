"""PURE: the data of a chart, from rows or a ``metrics_query`` result, checked and bounded.

What reaches the plotting program is plain: per series a label and lists of numbers
(or, for bars and text-valued x columns, category labels). Every label is cut to
``max_label_chars`` with control characters made spaces; the number of rows, series
and categories is held to the section's limits. Text is drawn literally (the program
switches mathtext off), so a ``$`` in a label is a dollar sign.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from common.config.analytics import ChartSection
from tools_app.builtin.base import RefusalCode, ToolRefusedError

CHART_KINDS: Final = ("line", "bar", "scatter")


@dataclass(frozen=True, slots=True)
class Series:
    label: str
    x: tuple[Any, ...]
    y: tuple[float | None, ...]


@dataclass(frozen=True, slots=True)
class ChartData:
    """What the program draws: ``x`` is numbers, times (Unix seconds) or categories."""

    axis: str  # "number" | "time" | "category"
    series: tuple[Series, ...]
    x_label: str
    y_label: str

    @property
    def points(self) -> int:
        return sum(len(s.y) for s in self.series)

    def request(self) -> dict[str, Any]:
        return {
            "axis": self.axis,
            "x_label": self.x_label,
            "y_label": self.y_label,
            "series": [{"label": s.label, "x": list(s.x), "y": list(s.y)} for s in self.series],
        }


def _refused(reason: str, code: RefusalCode = RefusalCode.INVALID_ARGUMENT) -> ToolRefusedError:
    return ToolRefusedError(code, reason)


def plain_label(text: object, limit: int) -> str:
    """``text`` as one line of at most ``limit`` characters, controls made spaces."""
    shown = "".join(" " if (ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0) else c for c in str(text))
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _number(value: object) -> float | None:
    """A number, a numeric string, or None for a gap (null or empty)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("true/false is not a number")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        number = float(value.strip())
    else:
        raise ValueError("not a number")
    return None if math.isnan(number) or math.isinf(number) else number


def rows_of(text: str, name: str) -> list[Mapping[str, Any]]:
    """The rows of a workspace file: CSV (header line first) or JSON (a list of objects)."""
    if name.lower().endswith(".json"):
        try:
            rows = json.loads(text)
        except ValueError as exc:
            raise _refused(f"{name} is not valid JSON: {exc}") from None
        if not isinstance(rows, list):
            raise _refused(f"{name} must hold a JSON list of objects (one per row)")
        return rows
    if not name.lower().endswith((".csv", ".tsv")):
        raise _refused("path must name a .csv, .tsv or .json file")
    dialect = "excel-tab" if name.lower().endswith(".tsv") else "excel"
    return list(csv.DictReader(io.StringIO(text), dialect=dialect))


def _y_columns(y: object) -> tuple[str, ...]:
    columns = (y,) if isinstance(y, str) else tuple(y) if isinstance(y, list) else ()
    if not columns or not all(isinstance(c, str) and c for c in columns):
        raise _refused("y must be a column name or a list of column names")
    return columns


def chart_data(
    section: ChartSection, data: object, *, kind: str, x: object, y: object
) -> ChartData:
    """The chart's series from rows (a list of objects) or a metrics_query result."""
    if kind not in CHART_KINDS:
        raise _refused("kind must be " + " | ".join(CHART_KINDS))
    if isinstance(data, Mapping) and isinstance(data.get("series"), list):
        return _from_query(section, data["series"], kind)
    if not isinstance(data, list):
        raise _refused("data must be a list of rows (objects) or a metrics_query result")
    return _from_rows(section, data, kind=kind, x=x, y=y)


def _from_rows(
    section: ChartSection, rows: Sequence[object], *, kind: str, x: object, y: object
) -> ChartData:
    limit = section.max_label_chars
    if not isinstance(x, str) or not x:
        raise _refused("x must name the column of the horizontal axis")
    columns = _y_columns(y)
    if len(columns) > section.max_series:
        raise _refused(
            f"{len(columns)} y columns; the limit is {section.max_series}",
            RefusalCode.LIMIT_EXCEEDED,
        )
    if not rows:
        raise _refused("there are no rows to draw")
    if len(rows) > section.max_rows:
        raise _refused(
            f"{len(rows)} rows; the limit is {section.max_rows}", RefusalCode.LIMIT_EXCEEDED
        )
    xs: list[Any] = []
    ys: dict[str, list[float | None]] = {c: [] for c in columns}
    for index, row in enumerate(rows, start=1):
        if not isinstance(row, Mapping):
            raise _refused(f"row {index} is not an object")
        for column in (x, *columns):
            if column not in row:
                raise _refused(f"row {index} has no column {plain_label(column, 60)!r}")
        xs.append(row[x])
        for column in columns:
            try:
                ys[column].append(_number(row[column]))
            except ValueError:
                shown = plain_label(row[column], 40)
                raise _refused(
                    f"row {index}, column {plain_label(column, 60)!r}: {shown!r} is not a number"
                ) from None
    axis, x_values = _x_axis(section, xs, kind)
    series = tuple(Series(plain_label(c, limit), tuple(x_values), tuple(ys[c])) for c in columns)
    return ChartData(axis, series, plain_label(x, limit), plain_label(", ".join(columns), limit))


def _x_axis(section: ChartSection, xs: list[Any], kind: str) -> tuple[str, list[Any]]:
    if kind != "bar":
        try:
            numbers = [_number(v) for v in xs]
        except ValueError:
            numbers = []
        if numbers and all(n is not None for n in numbers):
            return "number", numbers
    labels = [plain_label("" if v is None else v, section.max_label_chars) for v in xs]
    if len(set(labels)) > section.max_categories:
        raise _refused(
            f"{len(set(labels))} distinct x values; at most {section.max_categories} fit on a "
            "category axis",
            RefusalCode.LIMIT_EXCEEDED,
        )
    return "category", labels


def _from_query(section: ChartSection, raw: list[object], kind: str) -> ChartData:
    if kind == "bar":
        raise _refused("a metrics_query result is drawn as a line or scatter chart, not bars")
    if len(raw) > section.max_series:
        raise _refused(
            f"{len(raw)} series; the limit is {section.max_series}", RefusalCode.LIMIT_EXCEEDED
        )
    series: list[Series] = []
    total = 0
    for index, item in enumerate(raw, start=1):
        values = item.get("values") if isinstance(item, Mapping) else None
        if not isinstance(values, list):
            raise _refused(f"series {index} has no values")
        metric = item.get("metric") if isinstance(item, Mapping) else None
        labels = metric if isinstance(metric, Mapping) else {}
        label = ", ".join(f"{k}={v}" for k, v in labels.items()) or f"series {index}"
        total += len(values)
        if total > section.max_rows:
            raise _refused(
                f"over {section.max_rows} points; the limit is {section.max_rows}",
                RefusalCode.LIMIT_EXCEEDED,
            )
        try:
            pairs = [(_number(v[0]), _number(v[1])) for v in values]
        except (ValueError, TypeError, IndexError):
            raise _refused(f"series {index} holds a value that is not [time, number]") from None
        kept = [(t, v) for t, v in pairs if t is not None]
        series.append(
            Series(
                plain_label(label, section.max_label_chars),
                tuple(t for t, _ in kept),
                tuple(v for _, v in kept),
            )
        )
    if not series:
        raise _refused("the query result has no series to draw")
    return ChartData("time", tuple(series), "time", "value")
