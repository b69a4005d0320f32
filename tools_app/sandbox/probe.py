"""Does each backend work on this machine, and if not, why not.

``manage.py synthorg_sandbox probe`` prints :func:`probe_backends`. Every
probe runs something for real (a namespace, a container); nothing is
inferred from the presence of a binary alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import ProbeReport

if TYPE_CHECKING:
    from common.config.sandbox import SandboxingConfig


def probe_backends(config: SandboxingConfig | None = None) -> list[ProbeReport]:
    """Probe subprocess, namespace and docker as configured (defaults when ``config`` is None)."""
    from common.config.sandbox import SandboxingConfig
    from tools_app.sandbox.factory import build_backend

    cfg = config or SandboxingConfig()
    reports: list[ProbeReport] = []
    for name in ("subprocess", "namespace", "docker"):
        try:
            backend = build_backend(name, cfg)
        except SandboxError as exc:
            reports.append(ProbeReport(name, False, exc.reason))
            continue
        try:
            reports.append(backend.probe())
        finally:
            backend.close()
    return reports


def format_reports(reports: list[ProbeReport]) -> str:
    """One line per backend: ``name  ok|unavailable  reason``, then its details."""
    lines: list[str] = []
    for report in reports:
        state = "ok" if report.ok else "unavailable"
        lines.append(f"{report.backend:<11} {state:<12} {report.reason}")
        for key, value in report.details.items():
            lines.append(f"{'':<11} {'':<12} {key}: {value}")
    return "\n".join(lines)
