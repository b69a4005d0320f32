"""manage.py synthorg_config check [PATH]: validate the YAML config, field by field.

Beyond what loading checks, the read-only binds are looked up on this host: a path
that does not exist would be left out of the sandbox without a word.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from common.config import ConfigError, load_config
from common.config.binds import missing_binds
from tools_app.contracts import ContractError


class Command(BaseCommand):
    help = "Validate the SynthOrg YAML config."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        check = sub.add_parser("check", help="validate the config; exit 1 with field errors")
        check.add_argument("path", nargs="?", default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"] or settings.SYNTHORG_CONFIG)
        if options["path"] and not path.exists():
            self.stderr.write(f"{path}: no such file")
            sys.exit(1)
        try:
            config = load_config(path)
            missing = missing_binds(config)
            if missing:
                raise ConfigError(str(path), missing)
            from tools_app.registry import build_catalog

            catalog = build_catalog(config, source=str(path))
        except (ConfigError, ContractError) as exc:
            self.stderr.write(str(exc))
            sys.exit(1)
        where = str(path) if path.exists() else f"{path} (absent: the defaults apply)"
        levels = ", ".join(config.access_levels())
        self.stdout.write(f"{where}: valid")
        self.stdout.write(f"access levels: {levels}")
        self.stdout.write(f"trust strategy: {config.trust.strategy}")
        self.stdout.write(f"tools: {len(catalog.registry)} registered")
