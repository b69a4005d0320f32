#!/usr/bin/env python
"""Django's command-line utility for SynthOrg Console."""

import os
import sys


def _mode_of_this_console() -> None:
    """Without SYNTHORG_ENV, use the mode the launcher ran this var/'s console in.

    After `make run` (dev mode), `manage.py COMMAND` then works on the same
    console as printed in the README, instead of refusing to start in production.
    """
    if os.environ.get("SYNTHORG_ENV"):
        return
    from common.platform import runtime

    remembered = runtime.remembered_mode()
    if remembered is not None:
        os.environ["SYNTHORG_ENV"] = remembered


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")
    _mode_of_this_console()
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # Unsafe or missing settings: the message names each one; a stack adds nothing.
        print(f"manage.py: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
