"""The trust score chart's geometry (pure): axes with labelled ticks, points inside the plot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from trust_app.strategies.score_chart import score_chart

START = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


def test_points_lie_on_the_plot_and_the_axes_are_labelled() -> None:
    chart = score_chart(
        [(START, 0.0), (START + timedelta(hours=1), 0.5), (START + timedelta(hours=2), 1.0)]
    )
    assert chart is not None
    assert [t.label for t in chart.y_ticks] == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    assert [t.label for t in chart.x_ticks] == ["09:00", "09:40", "10:20", "11:00"]
    first, middle, last = chart.points
    assert (first.x, first.y) == (chart.left, chart.bottom)  # score 0 at the start: bottom left
    assert (last.x, last.y) == (chart.right, chart.top)  # score 1 at the end: top right
    assert chart.bottom > middle.y > chart.top
    assert "3 points: 0.00 at 2026-11-24 09:00 to 1.00 at 2026-11-24 11:00 UTC" in chart.summary


def test_scores_outside_zero_to_one_stay_inside_the_plot_and_one_point_draws_no_chart() -> None:
    chart = score_chart([(START, -2.0), (START + timedelta(days=3), 7.0)])
    assert chart is not None
    assert chart.points[0].y == chart.bottom and chart.points[1].y == chart.top
    assert chart.x_ticks[0].label == "11-24 09:00"  # a span over a day shows the date
    assert score_chart([(START, 0.5)]) is None
