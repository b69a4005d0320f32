"""``chart_render``: a line, bar or scatter chart as PNG and SVG in the workspace.

Registered when the config has an ``analytics`` section. The data is inline rows,
a ``metrics_query`` result, or a CSV/JSON file in the workspace (read as read_file
reads, ``confined.read_workspace_text``); it is checked and bounded here
(``tables.chart_data``) and drawn by matplotlib inside the sandbox
(``inside/chart.py``), which writes both files under ``.synthorg/charts/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from common.config import SynthOrgConfig
from common.config.analytics import ChartSection
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.analytics.confined import program, read_workspace_text, run_renderer
from tools_app.builtin.analytics.tables import CHART_KINDS, chart_data, plain_label, rows_of
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.builtin.pictures import SVG, picture_record, read_kept
from tools_app.contracts import ToolContract, ToolExample
from trust_app.policy.tool_view import ArgumentRole

TOOL_NAME: Final = "chart_render"
AUDIT_KIND: Final = "analytics.chart_render"
CHART_SOURCE: Final = program("chart.py")
MAX_TITLE_CHARS: Final = 200
_FILE: Final = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "bytes": {"type": "integer"},
    },
    "required": ["path", "sha256", "bytes"],
    "additionalProperties": False,
}


def analytics_offered(config: SynthOrgConfig) -> bool:
    """The category is on only when the config has an ``analytics`` section."""
    return config.analytics is not None


def _section() -> ChartSection:
    analytics = synthorg_config().analytics
    if analytics is None:
        raise ToolFailedError(
            "the analytics tools are off: the config has no 'analytics' section",
            code="ANALYTICS_UNAVAILABLE",
        )
    return analytics.charts


class ChartRenderTool:
    """``chart_render``: a chart of rows or a query result, kept in the workspace."""

    contract = ToolContract(
        name=TOOL_NAME,
        category=ToolCategory.ANALYTICS,
        action_type="docs:write",
        safety_class=SafetyClass.WRITE,
        summary="Draw a line, bar or scatter chart as PNG and SVG files in the workspace.",
        description=(
            "Draws `kind` from `data` (a list of row objects, or a metrics_query result) or "
            "from `path` (a .csv, .tsv or .json file in the workspace): `x` names the column "
            "of the horizontal axis, `y` the column or columns to plot (ignored for a "
            "metrics_query result, drawn against time). Saves a PNG and an SVG under "
            "`.synthorg/charts/` and returns their paths, SHA-256 and sizes."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "data": {
                    "anyOf": [
                        {"type": "array", "items": {"type": "object"}},
                        {
                            "type": "object",
                            "properties": {"series": {"type": "array"}},
                            "required": ["series"],
                        },
                    ]
                },
                "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                "kind": {"type": "string", "enum": list(CHART_KINDS)},
                "x": {"type": "string", "minLength": 1, "maxLength": 200},
                "y": {
                    "anyOf": [
                        {"type": "string", "minLength": 1, "maxLength": 200},
                        {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1, "maxLength": 200},
                            "minItems": 1,
                            "maxItems": 100,
                        },
                    ]
                },
                "title": {"type": "string", "maxLength": MAX_TITLE_CHARS},
            },
            "required": ["kind"],
            "oneOf": [{"required": ["data"]}, {"required": ["path"]}],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "png": _FILE,
                "svg": _FILE,
                "series": {"type": "integer"},
                "points": {"type": "integer"},
            },
            "required": ["png", "svg", "series", "points"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="Monthly revenue as bars.",
                arguments={
                    "data": [{"month": "Jan", "revenue": 10}, {"month": "Feb", "revenue": 12}],
                    "kind": "bar",
                    "x": "month",
                    "y": "revenue",
                    "title": "Revenue",
                },
            ),
        ),
        failure_modes=(
            "PATH_NOT_REACHABLE: the data file is outside the workspace, a symlink, or has "
            "more than one hard link.",
            "INVALID_ARGUMENT: a column is missing or a y value is not a number.",
            "LIMIT_EXCEEDED: more rows, series, categories or bytes than the configured limits.",
        ),
        argument_roles={"path": ArgumentRole.PATH},
    )
    offered = staticmethod(analytics_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Read and check the data, draw it in the sandbox, report the two files."""
        section = _section()
        data: object = arguments.get("data")
        path = arguments.get("path")
        if (data is None) == (path is None):
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "give either data or path")
        if path is not None:
            shown, text = read_workspace_text(context, path, section.max_data_bytes)
            data = rows_of(text, shown)
        kind = str(arguments.get("kind", ""))
        chart = chart_data(section, data, kind=kind, x=arguments.get("x"), y=arguments.get("y"))
        title = plain_label(arguments.get("title") or "", MAX_TITLE_CHARS)
        answer = run_renderer(
            context,
            CHART_SOURCE,
            {
                **chart.request(),
                "kind": kind,
                "title": title,
                "width_px": section.width_px,
                "height_px": section.height_px,
            },
            timeout_seconds=section.timeout_seconds,
            memory_bytes=section.memory_bytes,
        )
        png, svg = answer["png"], answer["svg"]
        for drawn in (png, svg):
            # Read back by the worker: the digests recorded are of the bytes really there.
            digest, data = read_kept(
                context, str(drawn["path"]), what="the chart", code="RENDER_FAILED"
            )
            if digest != drawn["sha256"] or len(data) != drawn["bytes"]:
                raise ToolFailedError(
                    "the chart in the workspace is not the one drawn", code="RENDER_FAILED"
                )
        picture_record(
            context,
            kind=AUDIT_KIND,
            tool=TOOL_NAME,
            category=ToolCategory.ANALYTICS.value,
            action_type="docs:write",
            pictures=[
                {
                    "label": "png",
                    "path": png["path"],
                    "sha256": png["sha256"],
                    "media_type": "image/png",
                },
                {"label": "svg", "path": svg["path"], "sha256": svg["sha256"], "media_type": SVG},
            ],
            reason=f"{kind} chart kept at {png['path']} and {svg['path']}",
        )
        structured = {
            "png": {k: png[k] for k in ("path", "sha256", "bytes")},
            "svg": {k: svg[k] for k in ("path", "sha256", "bytes")},
            "series": len(chart.series),
            "points": chart.points,
        }
        return ToolOutcome(
            content=(
                f"{kind} chart of {chart.points} points in {len(chart.series)} series saved to "
                f"{png['path']} (sha256 {png['sha256']}, {png['bytes']} bytes) and "
                f"{svg['path']} (sha256 {svg['sha256']}, {svg['bytes']} bytes)"
            ),
            structured=structured,
            duration_ms=answer.get("duration_ms"),
        )


chart_render = ChartRenderTool()
