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


def test_on_docker_the_gui_image_holds_the_programs() -> None:
    def config(backend: str, **desktop: str) -> SynthOrgConfig:
        return SynthOrgConfig.model_validate(
            {"desktop": desktop, "sandboxing": {"overrides": {"desktop": backend}}}
        )

    # The machine's own programs do not matter on docker: the GUI image has them.
    on, why = desktop_readiness(config("docker", xvfb_path="/usr/bin/no-such-xvfb"))
    assert on and "synthorg-sandbox-gui" in why and "docker" in why, why
    # Control: the namespace backend still needs them installed here.
    off, why = desktop_readiness(config("namespace", xvfb_path="/usr/bin/no-such-xvfb"))
    assert not off and "/usr/bin/no-such-xvfb" in why
