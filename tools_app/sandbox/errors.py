"""Errors raised by the sandbox layer.

Every error carries a ``reason`` written for the person (or agent) who has to
act on it: what was refused and what to change.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Base class of every sandbox refusal."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class SandboxSpecInvalidError(SandboxError):
    """The requested call is malformed (empty argv, shell string, bad limits)."""


class SandboxWorkspaceEscapeError(SandboxError):
    """A working directory or path resolves outside the workspace."""


class SandboxWorkspaceAccessError(SandboxError):
    """The sandbox user cannot read (or write) the workspace."""


class SandboxUnavailableError(SandboxError):
    """The backend cannot run on this machine; no weaker backend is used instead."""

    def __init__(self, backend: str, reason: str) -> None:
        super().__init__(f"sandbox backend {backend!r} is unavailable: {reason}")
        self.backend = backend
        self.detail = reason


class SandboxUserMissingError(SandboxUnavailableError):
    """The worker runs as root and the unprivileged sandbox user does not exist."""


class SandboxConfigInvalidError(SandboxError):
    """The ``sandboxing`` configuration names an unknown backend or category."""


class SandboxImageBuildError(SandboxError):
    """The sandbox container image could not be built."""
