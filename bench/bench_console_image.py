"""How long the console image takes to build without a registry, in three cases.

1. cold: no cached dependencies (uv installs uv.lock for Debian's python3, the tarball
   is written, bubblewrap's .deb copied) and no layer cache in the engine;
2. fresh engine: the dependencies tarball cached on the host, no layer cache (what a
   test run on a private engine does after the first);
3. up to date: the image's source label matches, nothing is built.

Needs a Docker engine at DOCKER_HOST with the sandbox image (`make bench` has both);
builds under its own tag and removes it afterwards.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

from synthorg_site.console_image.build import build_console_image  # noqa: E402
from tools_app.sandbox.backends.docker.engine import connect  # noqa: E402

TAG = "synthorg-console:bench"


def main() -> None:
    engine = connect(None, timeout=600)
    figures: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-console-image-") as tmp:
        cache = Path(tmp)
        started = time.monotonic()
        build_console_image(tag=TAG, client=engine, cache_dir=cache, force=True)
        figures.append(("console image build, cold", time.monotonic() - started))
        engine.images.remove(TAG, force=True)
        started = time.monotonic()
        build_console_image(tag=TAG, client=engine, cache_dir=cache, force=True)
        figures.append(("console image build, dependencies cached", time.monotonic() - started))
        started = time.monotonic()
        report = build_console_image(tag=TAG, client=engine, cache_dir=cache)
        assert report.method == "present", report
        figures.append(("console image build, up to date", time.monotonic() - started))
        engine.images.remove(TAG, force=True)
    for figure, seconds in figures:
        print(json.dumps({"figure": figure, "unit": "s", "p50": seconds,
                          "note": f"one build, {os.cpu_count()} cores shared"}))  # fmt: skip


if __name__ == "__main__":
    main()
