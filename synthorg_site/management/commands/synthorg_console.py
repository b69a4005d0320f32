"""manage.py synthorg_console build-image: the console's own container image."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Build the console's container image (docker/console/) without a registry."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        build = sub.add_parser("build-image", help="build synthorg-console:<version>")
        build.add_argument("--force", action="store_true", help="rebuild even if up to date")
        build.add_argument("--tag", help="the image's name (default synthorg-console:<version>)")

    def handle(self, *args: Any, **options: Any) -> None:
        from common.settings_config import synthorg_config
        from synthorg_site.console_image.build import CONSOLE_IMAGE, build_console_image
        from synthorg_site.console_image.errors import ConsoleImageError

        started = time.monotonic()
        try:
            report = build_console_image(
                tag=options["tag"] or CONSOLE_IMAGE,
                base=synthorg_config().sandboxing.docker.image,
                force=options["force"],
                log=lambda line: self.stdout.write(line),
            )
        except ConsoleImageError as exc:
            raise CommandError(str(exc)) from exc
        elapsed = time.monotonic() - started
        self.stdout.write(
            f"{report.image}: {report.method} (source {report.digest}) in {elapsed:.1f} s"
        )
