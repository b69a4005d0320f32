"""``analytics``: the opt-in analytics tools (``metrics_query``, ``chart_render``,
``report_build``).

The section's presence turns the category on (``analytics: {}`` takes every default):

- ``chart_render`` and ``report_build`` are registered with the section; both run
  inside the category's sandbox with Debian's ``python3-matplotlib`` and
  ``python3-jinja2`` and write into the agent's workspace (``.synthorg/charts/``,
  ``.synthorg/reports/``), bounded by ``charts`` and ``reports``;
- ``metrics_query`` only when ``metrics.connection`` names a configured connection
  to a Prometheus-compatible HTTP API (its operations must include
  ``GET /api/v1/query`` and, for ranges, ``GET /api/v1/query_range``); the agent
  must be granted that connection, as for ``external_data_request``.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field, StrictInt, StrictStr

from common.strict import StrictModel

MIB: Final = 1024 * 1024


class MetricsSection(StrictModel):
    """``analytics.metrics``: the Prometheus-compatible API and the bounds of one answer."""

    connection: StrictStr
    """A configured connection whose base URL is the API's root (``/api/v1/...`` below it)."""
    max_query_chars: StrictInt = Field(default=4000, ge=1, le=65536)
    max_series: StrictInt = Field(default=100, ge=1, le=10000)
    max_points_per_series: StrictInt = Field(default=1000, ge=1, le=11000)
    max_range_seconds: StrictInt = Field(default=31 * 86400, ge=60, le=366 * 86400)
    # A range given as a duration ("6h") gets the step that yields about this many points.
    default_points: StrictInt = Field(default=250, ge=2, le=11000)
    max_label_chars: StrictInt = Field(default=200, ge=16, le=4096)


class ChartSection(StrictModel):
    """``analytics.charts``: the ceilings of one ``chart_render`` call."""

    max_rows: StrictInt = Field(default=10_000, ge=1, le=1_000_000)
    max_series: StrictInt = Field(default=12, ge=1, le=100)
    max_label_chars: StrictInt = Field(default=100, ge=8, le=1000)
    max_categories: StrictInt = Field(default=200, ge=1, le=5000)
    max_data_bytes: StrictInt = Field(default=4 * MIB, ge=1024, le=64 * MIB)
    width_px: StrictInt = Field(default=1000, ge=200, le=4000)
    height_px: StrictInt = Field(default=600, ge=150, le=4000)
    timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    memory_mb: StrictInt = Field(default=1024, ge=256, le=16384)

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MIB


class ReportSection(StrictModel):
    """``analytics.reports``: the ceilings of one ``report_build`` call."""

    max_template_bytes: StrictInt = Field(default=64 * 1024, ge=64, le=4 * MIB)
    max_data_bytes: StrictInt = Field(default=4 * MIB, ge=1024, le=64 * MIB)
    max_output_bytes: StrictInt = Field(default=4 * MIB, ge=1024, le=64 * MIB)
    timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    memory_mb: StrictInt = Field(default=512, ge=128, le=16384)

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * MIB


class AnalyticsSection(StrictModel):
    """The ``analytics`` section."""

    metrics: MetricsSection | None = None
    charts: ChartSection = ChartSection()
    reports: ReportSection = ReportSection()
