"""manage.py synthorg_demo: seed the demo organisation (idempotent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from trust_app.demo import credentials_read, credentials_write, demo_seed


class Command(BaseCommand):
    help = "Seed the demo organisation once; credentials go to var/demo-credentials.txt."

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.VAR_DIR) / "demo-credentials.txt"
        created = demo_seed()
        if not created:
            self.stdout.write(f"demo organisation already seeded; credentials are in {path}")
            return
        # After a partial earlier seed, keep its lines and add the new ones.
        credentials_write(path, credentials_read(path) + created)
        self.stdout.write("demo organisation created; these secrets are shown once:")
        for credential in created:
            self.stdout.write("  " + credential.line())
        self.stdout.write(f"written to {path}")
