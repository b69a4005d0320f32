"""Which backend each tool category uses, and why (for the probe command and /healthz).

Pure: plain data from the validated ``sandboxing`` config.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from common.config.sandbox import DEFAULT_OVERRIDES, SandboxingConfig
from common.vocabulary.categories import ALL_CATEGORIES

WHY_BACKEND = MappingProxyType(
    {
        "subprocess": "the console's own file runner, in a private root: its own mount, "
        "network, IPC and pid namespaces, only its workspace and read-only system directories",
        "namespace": "external programs in bubblewrap namespaces: only the workspace and "
        "read-only system directories, no network unless the call needs it",
        "docker": "external programs in a locked-down container: only the workspace, "
        "no network unless configured",
    }
)


@dataclass(frozen=True, slots=True)
class CategoryRoute:
    """One category's backend, where the choice comes from, and what that backend gives."""

    category: str
    backend: str
    source: str
    why: str


def category_routes(config: SandboxingConfig) -> list[CategoryRoute]:
    """Every tool category with its backend, in a stable order."""
    routes: list[CategoryRoute] = []
    for category in sorted(ALL_CATEGORIES):
        backend = config.backend_for(category)
        if category not in config.overrides:
            source = "sandboxing.default_backend"
        elif DEFAULT_OVERRIDES.get(category) == backend:
            source = "default"
        else:
            source = "sandboxing.overrides"
        routes.append(CategoryRoute(category, backend, source, WHY_BACKEND[backend]))
    return routes


def categories_of(config: SandboxingConfig, backend: str) -> list[str]:
    """The categories ``backend`` serves under ``config``."""
    return [r.category for r in category_routes(config) if r.backend == backend]


def format_routes(routes: list[CategoryRoute]) -> str:
    """One line per category: ``category -> backend (source): why``."""
    width = max((len(r.category) for r in routes), default=0)
    return "\n".join(f"{r.category:<{width}} -> {r.backend} ({r.source}): {r.why}" for r in routes)
