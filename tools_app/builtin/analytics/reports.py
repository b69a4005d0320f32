"""``report_build``: a Markdown or HTML report in the workspace, from a template and data.

Registered when the config has an ``analytics`` section. The template (inline, or a
file in the workspace read as read_file reads) and the data (a JSON value, or a JSON
file in the workspace) are bounded here by ``analytics.reports``; Jinja2's
sandboxed environment renders them inside the sandbox (``inside/report.py``), which
cuts the output at its limit and writes the file under ``.synthorg/reports/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from common.config.analytics import ReportSection
from common.settings_config import synthorg_config
from common.vocabulary.categories import SafetyClass, ToolCategory
from tools_app.builtin.analytics.charts import analytics_offered
from tools_app.builtin.analytics.confined import program, read_workspace_text, run_renderer
from tools_app.builtin.base import (
    RefusalCode,
    ToolContext,
    ToolFailedError,
    ToolOutcome,
    ToolRefusedError,
)
from tools_app.contracts import ToolContract, ToolExample
from trust_app.policy.tool_view import ArgumentRole

TOOL_NAME: Final = "report_build"
REPORT_SOURCE: Final = program("report.py")
FORMATS: Final = ("markdown", "html")
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def _section() -> ReportSection:
    analytics = synthorg_config().analytics
    if analytics is None:
        raise ToolFailedError(
            "the analytics tools are off: the config has no 'analytics' section",
            code="ANALYTICS_UNAVAILABLE",
        )
    return analytics.reports


def _one_of(arguments: Mapping[str, Any], inline: str, path: str) -> None:
    if (arguments.get(inline) is None) == (arguments.get(path) is None):
        raise ToolRefusedError(
            RefusalCode.INVALID_ARGUMENT, f"give either {inline} or {path}, not both or neither"
        )


def _template(context: ToolContext, section: ReportSection, arguments: Mapping[str, Any]) -> str:
    _one_of(arguments, "template", "template_path")
    if arguments.get("template_path") is not None:
        return read_workspace_text(context, arguments["template_path"], section.max_template_bytes)[
            1
        ]
    template = str(arguments["template"])
    if len(template.encode("utf-8", "surrogatepass")) > section.max_template_bytes:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"the template is over {section.max_template_bytes} bytes "
            "(analytics.reports.max_template_bytes)",
        )
    return template


def _data(context: ToolContext, section: ReportSection, arguments: Mapping[str, Any]) -> Any:
    if arguments.get("data_path") is not None:
        _one_of(arguments, "data", "data_path")
        shown, text = read_workspace_text(context, arguments["data_path"], section.max_data_bytes)
        try:
            return json.loads(text)
        except ValueError as exc:
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, f"{shown} is not valid JSON: {exc}"
            ) from None
    data = arguments.get("data", {})
    if len(json.dumps(data, ensure_ascii=False).encode("utf-8")) > section.max_data_bytes:
        raise ToolRefusedError(
            RefusalCode.LIMIT_EXCEEDED,
            f"data is over {section.max_data_bytes} bytes (analytics.reports.max_data_bytes)",
        )
    return data


class ReportBuildTool:
    """``report_build``: one rendered report, kept in the workspace."""

    contract = ToolContract(
        name=TOOL_NAME,
        category=ToolCategory.ANALYTICS,
        action_type="docs:write",
        safety_class=SafetyClass.WRITE,
        summary="Render a Markdown or HTML report from a Jinja2 template and data.",
        description=(
            "Renders `template` (Jinja2 syntax; or `template_path`, a file in the workspace) "
            "with `data` (a JSON value; or `data_path`, a JSON file in the workspace): an "
            "object's keys are variables, and the whole value is `data`. Saves the result "
            "under `.synthorg/reports/` (named `name`-<digest>) and returns its path, SHA-256 "
            "and size. HTML output escapes every value. The template runs in a sandboxed "
            "engine: no file includes, no access to internals, bounded output."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "template": {"type": "string", "minLength": 1},
                "template_path": {"type": "string", "minLength": 1, "maxLength": 4096},
                "data": {},
                "data_path": {"type": "string", "minLength": 1, "maxLength": 4096},
                "format": {"type": "string", "enum": list(FORMATS)},
                "name": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"},
            },
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "bytes": {"type": "integer"},
                "format": {"type": "string", "enum": list(FORMATS)},
            },
            "required": ["path", "sha256", "bytes", "format"],
            "additionalProperties": False,
        },
        examples=(
            ToolExample(
                description="A weekly summary in Markdown.",
                arguments={
                    "template": "# {{ title }}\n{% for r in rows %}- {{ r.name }}: {{ r.value }}\n"
                    "{% endfor %}",
                    "data": {"title": "Week 12", "rows": [{"name": "signups", "value": 42}]},
                    "name": "weekly",
                },
            ),
        ),
        failure_modes=(
            "TEMPLATE_INVALID: the template does not parse (the line is given).",
            "TEMPLATE_UNSAFE: the template reached for something the sandboxed engine forbids.",
            "LIMIT_EXCEEDED: the template, data or output is over the configured limit.",
            "TIMED_OUT: rendering did not finish in time.",
        ),
        argument_roles={"template_path": ArgumentRole.PATH, "data_path": ArgumentRole.PATH},
    )
    offered = staticmethod(analytics_offered)

    def run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Bound the template and data, render them in the sandbox, report the file."""
        section = _section()
        fmt = str(arguments.get("format", "markdown"))
        if fmt not in FORMATS:
            raise ToolRefusedError(RefusalCode.INVALID_ARGUMENT, "format must be markdown or html")
        name = arguments.get("name")
        if name is not None and not (isinstance(name, str) and _NAME.fullmatch(name)):
            raise ToolRefusedError(
                RefusalCode.INVALID_ARGUMENT, "name must be letters, digits, '_' and '-'"
            )
        template = _template(context, section, arguments)
        data = _data(context, section, arguments)
        answer = run_renderer(
            context,
            REPORT_SOURCE,
            {
                "template": template,
                "data": data,
                "format": fmt,
                "max_output_bytes": section.max_output_bytes,
                "stem": name,
            },
            timeout_seconds=section.timeout_seconds,
            memory_bytes=section.memory_bytes,
        )
        report = answer["report"]
        structured = {
            "path": str(report["path"]),
            "sha256": str(report["sha256"]),
            "bytes": int(report["bytes"]),
            "format": fmt,
        }
        return ToolOutcome(
            content=(
                f"{fmt} report saved to {structured['path']} (sha256 {structured['sha256']}, "
                f"{structured['bytes']} bytes)"
            ),
            structured=structured,
            duration_ms=answer.get("duration_ms"),
        )


report_build = ReportBuildTool()
