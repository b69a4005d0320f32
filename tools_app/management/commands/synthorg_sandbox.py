"""manage.py synthorg_sandbox probe | build-image."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.settings_config import synthorg_config
from tools_app.sandbox.errors import SandboxError


class Command(BaseCommand):
    help = "Probe the sandbox backends, or build the Docker sandbox image."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("probe", help="which backends work here, and why not")
        build = sub.add_parser("build-image", help="build the Docker sandbox image")
        build.add_argument("--force", action="store_true", help="rebuild even if present")
        build.add_argument(
            "--gui",
            action="store_true",
            help="also build the browser and desktop image (built anyway when the config "
            "sends either category to docker)",
        )
        source = build.add_mutually_exclusive_group()
        source.add_argument("--registry", action="store_true", help="build from the Dockerfile")
        source.add_argument(
            "--rootfs", action="store_true", help="build from a debootstrap root filesystem"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "probe":
            self._probe()
        else:
            self._build(options)

    def _probe(self) -> None:
        from tools_app.sandbox.probe import format_reports, probe_backends
        from tools_app.sandbox.routes import category_routes, format_routes

        config = synthorg_config().sandboxing
        reports = probe_backends(config)
        self.stdout.write(format_reports(reports))
        self.stdout.write("\ncategories (backend, where the choice comes from, what it gives):")
        self.stdout.write(format_routes(category_routes(config)))
        needed = set(config.referenced_backends())
        broken = [r.backend for r in reports if r.backend in needed and not r.ok]
        if broken:
            self.stderr.write(f"configured but not working here: {', '.join(broken)}")
            sys.exit(1)

    def _build(self, options: dict[str, Any]) -> None:
        from common.vocabulary.sandbox import GUI_CATEGORIES
        from tools_app.sandbox.backends.docker.image import build_gui_image, build_sandbox_image

        config = synthorg_config().sandboxing
        use_registry = True if options["registry"] else False if options["rootfs"] else None
        gui = options["gui"] or any(config.backend_for(c) == "docker" for c in GUI_CATEGORIES)
        try:
            reports = [
                build_sandbox_image(
                    tag=config.docker.image,
                    force=options["force"],
                    use_registry=use_registry,
                    log=lambda line: self.stdout.write(line),
                )
            ]
            if gui:
                reports.append(
                    build_gui_image(
                        tag=config.docker.gui_image,
                        force=options["force"],
                        log=lambda line: self.stdout.write(line),
                    )
                )
        except SandboxError as exc:
            raise CommandError(getattr(exc, "reason", str(exc))) from exc
        for report in reports:
            self.stdout.write(f"{report.image}: {report.method} ({report.detail})")
