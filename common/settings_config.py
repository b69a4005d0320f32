"""The YAML config of this process, loaded once and checked at start."""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings

from common.config import SynthOrgConfig, load_config


@functools.cache
def synthorg_config() -> SynthOrgConfig:
    """The validated config named by SYNTHORG_CONFIG (defaults when the file is absent)."""
    return load_config(Path(settings.SYNTHORG_CONFIG))


def config_reload() -> SynthOrgConfig:
    """Forget the cached config (tests, or after the file changed) and load it again."""
    synthorg_config.cache_clear()
    return synthorg_config()
