"""PURE: a ``metrics_query`` call as Prometheus HTTP API parameters, and its answer bounded.

``range`` is either a duration ending now (``"6h"``, ``"1h30m"``) or
``{start, end, step?}`` (Unix seconds or RFC 3339; ``step`` a duration or seconds).
Without ``range`` the query is instant (``/api/v1/query``); with it, a range query
(``/api/v1/query_range``). The answer is Prometheus's JSON envelope
(``status``, ``data.resultType``, ``data.result``; ``errorType`` and ``error`` on
failure); it comes back as series of ``[timestamp, value]`` pairs, values as the
strings Prometheus sends (``NaN`` and ``+Inf`` are not JSON numbers), cut to the
configured number of series, points and label length, with ``truncated`` saying so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from common.config.analytics import MetricsSection
from tools_app.builtin.base import RefusalCode, ToolRefusedError

INSTANT_PATH: Final = "/api/v1/query"
RANGE_PATH: Final = "/api/v1/query_range"
_DURATION: Final = re.compile(r"(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_UNITS: Final = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1)
RESULT_TYPES: Final = ("vector", "matrix", "scalar", "string")


class MetricsAnswerError(Exception):
    """The API answered something that is not a Prometheus answer, or an error."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class MetricsRequest:
    """The path and query parameters to send."""

    path: str
    params: tuple[tuple[str, str], ...]
    seconds: float | None = None
    """The range's length (None: an instant query)."""


def _invalid(reason: str) -> ToolRefusedError:
    return ToolRefusedError(RefusalCode.INVALID_ARGUMENT, reason)


def duration_seconds(text: object) -> int:
    """``"1h30m"`` → 5400; a whole number of seconds is taken as it is."""
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        return text
    match = _DURATION.fullmatch(text) if isinstance(text, str) and text else None
    if match is None or not any(match.groups()):
        raise _invalid(
            f"duration {str(text)[:40]!r} must be like '30s', '15m', '6h', '7d' or '1h30m'"
        )
    seconds = sum(int(n) * unit for n, unit in zip(match.groups(), _UNITS, strict=True) if n)
    if seconds <= 0:
        raise _invalid("a duration must be longer than 0s")
    return seconds


def timestamp(value: object, what: str) -> float:
    """Unix seconds from a number or an RFC 3339 string with its offset."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if isinstance(value, str) and len(value) <= 40:
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None:
            return moment.timestamp()
    raise _invalid(f"{what} must be Unix seconds or an RFC 3339 time with its offset")


def metrics_request(
    section: MetricsSection, query: object, window: object, now: float
) -> MetricsRequest:
    """The request for ``query`` over ``window`` (the ``range`` argument), checked."""
    if not isinstance(query, str) or not query.strip():
        raise _invalid("query must be a non-empty PromQL expression")
    if len(query) > section.max_query_chars:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"query is {len(query)} characters; the limit is {section.max_query_chars}",
        )
    if window is None:
        return MetricsRequest(INSTANT_PATH, (("query", query), ("time", _number(now))))
    step: float | None = None
    if isinstance(window, Mapping):
        start = timestamp(window.get("start"), "range.start")
        end = timestamp(window.get("end", now), "range.end")
        if window.get("step") is not None:
            step = float(duration_seconds(window["step"]))
    else:
        end = now
        start = now - duration_seconds(window)
    seconds = end - start
    if seconds <= 0:
        raise _invalid("range.start must be before range.end")
    if seconds > section.max_range_seconds:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"the range spans {int(seconds)}s; the limit is {section.max_range_seconds}s",
        )
    if step is None:
        wanted = max(1, min(section.default_points, section.max_points_per_series - 1))
        step = float(max(1, math.ceil(seconds / wanted)))
    points = seconds / step + 1
    if points > section.max_points_per_series:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"a step of {step:g}s over {int(seconds)}s gives {int(points)} points per "
            f"series; the limit is {section.max_points_per_series}: use a longer step",
        )
    params = (
        ("query", query),
        ("start", _number(start)),
        ("end", _number(end)),
        ("step", _number(step)),
    )
    return MetricsRequest(RANGE_PATH, params, seconds)


def _number(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _label(text: object, limit: int) -> tuple[str, bool]:
    shown = str(text)
    return (shown[:limit], True) if len(shown) > limit else (shown, False)


def _pair(value: object) -> list[Any]:
    if not isinstance(value, list) or len(value) != 2:
        raise MetricsAnswerError("NOT_PROMETHEUS", "a sample is not a [timestamp, value] pair")
    moment, sample = value
    if not isinstance(moment, int | float) or isinstance(moment, bool):
        raise MetricsAnswerError("NOT_PROMETHEUS", "a sample's timestamp is not a number")
    return [moment, str(sample)]


def bounded_answer(section: MetricsSection, answer: object, status: int) -> dict[str, Any]:
    """``{result_type, series: [{metric, values}], warnings, truncated}`` from the API's
    JSON; MetricsAnswerError for an error answer or anything else."""
    if not isinstance(answer, Mapping) or answer.get("status") not in ("success", "error"):
        raise MetricsAnswerError(
            "NOT_PROMETHEUS", f"HTTP {status}: the answer is not a Prometheus API envelope"
        )
    if answer["status"] == "error":
        error_type = str(answer.get("errorType") or "error")[:64]
        error = str(answer.get("error") or "no message")[:1000]
        raise MetricsAnswerError(
            "QUERY_FAILED", f"Prometheus refused the query ({error_type}): {error}"
        )
    data = answer.get("data")
    kind = data.get("resultType") if isinstance(data, Mapping) else None
    if kind not in RESULT_TYPES:
        raise MetricsAnswerError("NOT_PROMETHEUS", "data.resultType is missing or unknown")
    assert isinstance(data, Mapping)
    result = data.get("result")
    truncated = False
    series: list[dict[str, Any]] = []
    if kind in ("scalar", "string"):
        series.append({"metric": {}, "values": [_pair(result)]})
    elif not isinstance(result, list):
        raise MetricsAnswerError("NOT_PROMETHEUS", "data.result is not a list")
    else:
        if len(result) > section.max_series:
            truncated = True
        for item in result[: section.max_series]:
            if not isinstance(item, Mapping):
                raise MetricsAnswerError("NOT_PROMETHEUS", "a series is not an object")
            metric: dict[str, str] = {}
            for key, value in list((item.get("metric") or {}).items())[:64]:
                name, cut_name = _label(key, section.max_label_chars)
                shown, cut_value = _label(value, section.max_label_chars)
                metric[name] = shown
                truncated = truncated or cut_name or cut_value
            raw = item.get("values") if kind == "matrix" else [item.get("value")]
            if not isinstance(raw, list):
                raw = []  # a native histogram only: no float samples to give
            if len(raw) > section.max_points_per_series:
                truncated = True
            values = [_pair(v) for v in raw[: section.max_points_per_series] if v is not None]
            series.append({"metric": metric, "values": values})
    warnings = [str(w)[:500] for w in (answer.get("warnings") or [])[:10]]
    return {"result_type": kind, "series": series, "warnings": warnings, "truncated": truncated}
