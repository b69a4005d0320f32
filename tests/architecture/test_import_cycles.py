"""No import cycle between the console's modules, counting imports made inside functions.

import-linter checks the directions between apps and between sibling packages; this
checks the module graph itself. A cycle that remains is named here with its reason, and
a new module joining it (or any new cycle) fails with the modules it runs through.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (
    "common",
    "audit_app",
    "trust_app",
    "secrets_app",
    "tools_app",
    "notifications_app",
    "approvals_app",
    "synthorg_site",
)

# Each remaining cycle, exactly, with its reason. Shrink this; never grow it.
NAMED_CYCLES = {
    frozenset(
        {
            "tools_app.registry",
            "tools_app.bridge.catalog",
            "tools_app.bridge.tool",
            "tools_app.bridge.pool",
            "tools_app.bridge.upstream_call",
            "tools_app.bridge.discovery",
            "tools_app.bridge.services",
            "tools_app.bridge.pinning",
        }
    ): "the registry lists the bridged upstream tools beside the built-ins, and the bridge "
    "checks what it records against the built-ins (late imports on both sides)",
}


def strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's components of more than one module (iterative: the graph is large)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def module_graph(*packages: str) -> dict[str, set[str]]:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    graph = grimp.build_graph(*packages, cache_dir=None, exclude_type_checking_imports=True)
    return {
        module: {m for m in graph.find_modules_directly_imported_by(module) if m in graph.modules}
        for module in graph.modules
    }


def test_no_import_cycle_but_the_named_ones() -> None:
    cycles = set(strongly_connected(module_graph(*PACKAGES)))
    unexpected = [sorted(c) for c in cycles if c not in NAMED_CYCLES]
    assert unexpected == [], f"import cycles: {unexpected}"
    gone = [reason for cycle, reason in NAMED_CYCLES.items() if cycle not in cycles]
    assert gone == [], f"a named cycle is gone (or changed): remove it from NAMED_CYCLES: {gone}"


def test_a_cycle_through_an_import_inside_a_function_is_found() -> None:
    # Control: the check sees the kind of cycle it exists for.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [frozenset({"a", "b", "c"})]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []
