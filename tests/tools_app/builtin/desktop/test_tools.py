"""Where the desktop category is on, and why not elsewhere."""

from __future__ import annotations

from common.config import SynthOrgConfig
from tools_app.builtin.desktop.tools import desktop_readiness


def test_the_category_is_on_only_with_its_section_and_its_programs() -> None:
    on, why = desktop_readiness(SynthOrgConfig.model_validate({"desktop": {}}))
    assert on, why
    off, why = desktop_readiness(SynthOrgConfig())
    assert not off and "no 'desktop' section" in why
    missing = SynthOrgConfig.model_validate({"desktop": {"xvfb_path": "/usr/bin/no-such-xvfb"}})
    off, why = desktop_readiness(missing)
    assert not off and "/usr/bin/no-such-xvfb" in why and "apt-get install" in why
