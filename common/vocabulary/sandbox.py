"""Names of the sandbox every part agrees on. Plain constants: the sandbox's own code runs
under interpreters with nothing but the standard library."""

from __future__ import annotations

# The unprivileged user every sandboxed command runs as, and the sandbox image built for it.
DEFAULT_SANDBOX_USER = "synthorg-sandbox"
SANDBOX_IMAGE_REPOSITORY = "synthorg-sandbox"
SANDBOX_IMAGE_VERSION = "0.1.0"
SANDBOX_IMAGE = f"{SANDBOX_IMAGE_REPOSITORY}:{SANDBOX_IMAGE_VERSION}"
# The same root filesystem plus Chromium, Xvfb, xdotool, scrot, X programs and fonts: the
# browser and desktop categories' image on the docker backend (plain calls keep the small one).
SANDBOX_GUI_IMAGE = f"{SANDBOX_IMAGE_REPOSITORY}-gui:{SANDBOX_IMAGE_VERSION}"
GUI_CATEGORIES = ("browser", "desktop")

# What the isolating sandboxes mount of their own after the read-only binds (namespace:
# /proc, /dev, a private /tmp, the workspace, the egress proxy's directory; docker: /tmp,
# the workspace and the proxy's directory): a bind at or under one of them is hidden.
SANDBOX_OWN_MOUNTS = ("/proc", "/dev", "/tmp", "/workspace", "/run/synthorg-egress")  # noqa: S108
