"""Fixtures shared by the built-in tool tests; they live in fs_fixtures and are listed here."""

from tests.tools_app.builtin.fs_fixtures import (
    ns_backend,
    outside_dir,
    subprocess_backend,
    workspace,
)

__all__ = ["ns_backend", "outside_dir", "subprocess_backend", "workspace"]
