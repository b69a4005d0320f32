"""Names of the sandbox every part agrees on. Plain constants: the sandbox's own code runs
under interpreters with nothing but the standard library."""

from __future__ import annotations

# The unprivileged user every sandboxed command runs as, and the sandbox image built for it.
DEFAULT_SANDBOX_USER = "synthorg-sandbox"
SANDBOX_IMAGE_REPOSITORY = "synthorg-sandbox"
SANDBOX_IMAGE_VERSION = "0.1.0"
SANDBOX_IMAGE = f"{SANDBOX_IMAGE_REPOSITORY}:{SANDBOX_IMAGE_VERSION}"
