"""A metrics_query call as Prometheus API parameters, and the answer bounded."""

from __future__ import annotations

import pytest

from common.config.analytics import MetricsSection
from tools_app.builtin.analytics.prometheus import (
    MetricsAnswerError,
    bounded_answer,
    metrics_request,
)
from tools_app.builtin.base import RefusalCode, ToolRefusedError

SECTION = MetricsSection(connection="p", max_series=2, max_points_per_series=100)
NOW = 1_700_000_000.0


def test_a_duration_ends_now_and_gets_a_step_within_the_point_limit() -> None:
    request = metrics_request(SECTION, "up", "1h30m", NOW)
    params = dict(request.params)
    assert request.path == "/api/v1/query_range" and request.seconds == 5400
    assert float(params["end"]) == NOW and float(params["start"]) == NOW - 5400
    assert 5400 / float(params["step"]) + 1 <= SECTION.max_points_per_series
    instant = metrics_request(SECTION, "up", None, NOW)
    assert instant.path == "/api/v1/query" and dict(instant.params)["time"] == "1700000000"


def test_ranges_past_the_limits_are_refused_with_the_limit() -> None:
    with pytest.raises(ToolRefusedError) as points:
        metrics_request(SECTION, "up", {"start": NOW - 3600, "end": NOW, "step": "1s"}, NOW)
    assert points.value.code is RefusalCode.LIMIT_EXCEEDED and "100" in points.value.reason
    with pytest.raises(ToolRefusedError, match="must be like"):
        metrics_request(SECTION, "up", "forever", NOW)
    # Control: RFC 3339 times with a step that fits.
    fits = metrics_request(
        SECTION,
        "up",
        {"start": "2023-11-14T22:00:00Z", "end": "2023-11-14T22:13:20Z", "step": "10s"},
        NOW,
    )
    assert dict(fits.params)["step"] == "10"


def test_answers_are_cut_and_errors_keep_prometheus_words() -> None:
    series = [{"metric": {"job": str(i)}, "values": [[NOW, "1"]] * 150} for i in range(3)]
    answer = {"status": "success", "data": {"resultType": "matrix", "result": series}}
    bounded = bounded_answer(SECTION, answer, 200)
    assert len(bounded["series"]) == 2 and len(bounded["series"][0]["values"]) == 100
    assert bounded["truncated"] is True
    refused = {"status": "error", "errorType": "bad_data", "error": "parse error"}
    with pytest.raises(MetricsAnswerError, match=r"\(bad_data\): parse error"):
        bounded_answer(SECTION, refused, 400)
    with pytest.raises(MetricsAnswerError, match="not a Prometheus API envelope"):
        bounded_answer(SECTION, {"rows": []}, 200)
