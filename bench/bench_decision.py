"""Decision and listing latency of the pure policy engine.

Builds 1,000 agents (all five levels, with realistic allowed lists, denied
lists and sub-constraint overrides) and 200 tools across the 17 categories,
then measures:

- one ``decide`` call with arguments (paths and URLs checked), p50 and p99;
- one ``list_permitted`` call over all 200 tools for one agent, p50 and p99;
- compiling one agent's policy (``build_agent_policy``), p50 and p99.

Targets: p99 <= 50 us per decision, <= 2 ms per listing.

Run with ``uv run python bench/bench_decision.py``. Each figure is printed as
one JSON line on stdout,
``{"figure": ..., "unit": "µs", "p50": x, "p95_or_p99": y, "note": ...}``;
``make bench`` collects the lines of every benchmark into one table.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.vocabulary.levels import NetworkMode
from trust_app.policy import (  # after the path set-up above
    ALL_CATEGORIES,
    DEFAULT_ACTION_TYPE,
    AgentPolicy,
    SubConstraintOverrides,
    ToolView,
    build_agent_policy,
    decide,
    list_permitted,
)

AGENTS = 1_000
TOOLS = 200
DECISIONS = 100_000
LISTINGS = 2_000
SEED = 20_240_601

ROLES = {
    "file_system": {"path": "path"},
    "web": {"url": "url"},
    "browser": {"url": "url"},
    "external_data": {"url": "url"},
    "terminal": {"command": "command"},
    "version_control": {"url": "url"},
}
ARGUMENTS = {
    "path": ["src/app/main.py", "docs/README.md", "../../etc/passwd", "%2e%2e/secret", "a/b/c.txt"],
    "url": [
        "https://api.github.com/repos/x/y",
        "https://docs.example.org/page",
        "http://2130706433/",
        "https://allowed@evil.example/",
    ],
    "command": ["ls -la", "git status", "rm -rf /", "grep -r TODO ."],
}


def build_tools(rng: random.Random) -> list[ToolView]:
    """200 tools spread over the 17 categories."""
    tools = []
    for index in range(TOOLS):
        category = ALL_CATEGORIES[index % len(ALL_CATEGORIES)]
        action = DEFAULT_ACTION_TYPE.get(category, "code:read")
        if category == "version_control":
            action = rng.choice(["vcs:read", "vcs:commit", "vcs:clone", "vcs:push"])
        safety = rng.choices(
            ["read", "write", "network", "financial", "privileged"], [50, 30, 12, 5, 3]
        )[0]
        tools.append(
            ToolView.build(
                name=f"{category}_tool_{index}",
                category=category,
                action_type=action,
                safety_class=safety,
                summary=f"Tool {index} in {category}",
                argument_roles=ROLES.get(category, {}),
                isolation=rng.choice(["containerized", "namespace", None]),
            )
        )
    return tools


def build_agents(rng: random.Random, tools: list[ToolView]) -> list[AgentPolicy]:
    """1,000 agents with lists and overrides."""
    names = [t.name for t in tools]
    agents = []
    for index in range(AGENTS):
        level = rng.choices(
            ["sandboxed", "restricted", "standard", "elevated", "custom"], [20, 25, 35, 10, 10]
        )[0]
        overrides = None
        if rng.random() < 0.3:
            overrides = SubConstraintOverrides(
                network=rng.choice([NetworkMode.ALLOWLIST_ONLY, NetworkMode.OPEN]),
                allowed_hosts=("api.github.com:443", "*.example.org", "10.0.0.5:5432"),
                requires_approval=("deploy", "db:mutate"),
            )
        agents.append(
            build_agent_policy(
                name=f"agent-{index}",
                level=level,
                allowed=rng.sample(names, rng.randint(0, 10)),
                denied=[n.upper() for n in rng.sample(names, rng.randint(0, 5))],
                overrides=overrides,
                workspace=f"/srv/agents/agent-{index}/workspace",
            )
        )
    return agents


def _arguments(rng: random.Random, tool: ToolView) -> dict[str, object]:
    return {
        name: rng.choice(ARGUMENTS[role]) for name, role in tool.argument_roles if role in ARGUMENTS
    }


def _percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(figure: str, samples_ns: Sequence[float], note: str) -> str:
    micro = [s / 1000 for s in samples_ns]
    return json.dumps(
        {
            "figure": figure,
            "unit": "µs",
            "p50": round(statistics.median(micro), 2),
            "p95_or_p99": round(_percentile(micro, 0.99), 2),
            "note": note,
        },
        ensure_ascii=False,
    )


def main() -> None:
    """Build the population, time decisions and listings, print JSON lines."""
    rng = random.Random(SEED)
    tools = build_tools(rng)
    agents = build_agents(rng, tools)
    calls = []
    for _ in range(DECISIONS):
        tool = rng.choice(tools)
        calls.append((rng.choice(agents), tool, _arguments(rng, tool)))
    clock = time.perf_counter_ns
    # As timeit does: collector pauses belong to the process, not to one call.
    gc.collect()
    gc.disable()
    for agent, tool, arguments in calls[:5_000]:  # warm-up
        decide(agent, tool, arguments)
    decision_ns = []
    for agent, tool, arguments in calls:
        start = clock()
        decide(agent, tool, arguments)
        decision_ns.append(clock() - start)
    build_ns = []
    for index in range(LISTINGS):
        start = clock()
        build_agent_policy(
            name=f"rebuilt-{index}",
            level="standard",
            allowed=[t.name for t in tools[:8]],
            denied=[t.name for t in tools[8:12]],
            workspace=f"/srv/agents/rebuilt-{index}/workspace",
        )
        build_ns.append(clock() - start)
    listing_ns = []
    for _ in range(LISTINGS):
        agent = rng.choice(agents)
        start = clock()
        list_permitted(agent, tools)
        listing_ns.append(clock() - start)
    gc.enable()
    print(
        _row(
            "policy decision (decide, with arguments)",
            decision_ns,
            f"p99; {AGENTS} agents x {TOOLS} tools, {DECISIONS} calls; target p99 <= 50 µs",
        )
    )
    print(
        _row(
            "permitted-tools listing (list_permitted)",
            listing_ns,
            f"p99; one agent, {TOOLS} tools, {LISTINGS} listings; target p99 <= 2000 µs",
        )
    )
    print(
        _row(
            "agent policy build (build_agent_policy)",
            build_ns,
            "p99; 8 allowed + 4 denied names; done once per agent load",
        )
    )


if __name__ == "__main__":
    main()
