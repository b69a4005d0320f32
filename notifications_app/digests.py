"""PURE: which events are told together, and what one digest of them says.

Events are alike when they are the same event about requests of the same agent and
risk tier: a flood of one agent's calls is one burst, however many tools it uses.
A digest counts every request in it, by tool (and, once settled, by outcome), and
links to the inbox narrowed to the agent.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

# Request ids a digest lists (a webhook receiver may want them); the count is exact.
DIGEST_IDS: Final = 1000


def batch_key(event: str, facts: Mapping[str, Any]) -> str:
    """``<event>:<agent id>:<risk tier>``: the events a digest tells together."""
    return f"{event}:{facts['agent_id']}:{facts['risk_tier']}"


def digest_facts(members: Sequence[Mapping[str, Any]], *, key: str, link: str) -> dict[str, Any]:
    """What a digest of ``members`` (the facts of each event, oldest first) says."""
    first = members[0]
    event = str(first["event"])
    created = sorted(str(m.get("created_at", "")) for m in members)
    facts: dict[str, Any] = {
        "digest": True,
        "event": event,
        "batch_key": key,
        "count": len(members),
        "agent": first["agent"],
        "agent_id": first["agent_id"],
        "team": first.get("team", ""),
        "risk_tier": first["risk_tier"],
        "tools": dict(Counter(str(m["tool"]) for m in members)),
        "request_ids": [str(m["request_id"]) for m in members[:DIGEST_IDS]],
        "first_at": created[0],
        "last_at": created[-1],
        "sample_effect": first.get("effect", ""),
        "effect": first.get("effect", ""),
        "link": link,
    }
    if event == "decided":
        facts["statuses"] = dict(Counter(str(m.get("status", "")) for m in members))
    return facts
