"""The analytics tools: chart_render and report_build with an ``analytics`` section,
metrics_query only when ``analytics.metrics`` names a connection."""

from __future__ import annotations

from typing import Final

from tools_app.builtin.analytics.charts import chart_render
from tools_app.builtin.analytics.metrics import metrics_query
from tools_app.builtin.analytics.reports import report_build

TOOLS: Final = (metrics_query, chart_render, report_build)
