"""Trust disabled: the level an admin configured applies and never changes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import ClassVar

from common.config.trust import DisabledTrust
from trust_app.strategies.base import AgentFacts, Evaluation, TrustState
from trust_app.strategies.evidence import Evidence


@dataclass(frozen=True, slots=True)
class DisabledStrategy:
    """Keeps no tracks, so the effective level is always the configured one.

    ``initial_level`` of the config is the level new agents are given; it never
    lowers an existing agent's configured level.
    """

    config: DisabledTrust
    name: ClassVar[str] = "disabled"

    def tracks(self) -> tuple[str, ...]:
        """No tracks: nothing is earned."""
        return ()

    def initial_state(self, facts: AgentFacts) -> TrustState:
        """An empty state."""
        return TrustState(
            strategy=self.name,
            levels=MappingProxyType({}),
            score=0.0,
            started_at=facts.started_at,
            last_verified_at=facts.started_at,
        )

    def evaluate(
        self, state: TrustState, evidence: Evidence, now: datetime, facts: AgentFacts
    ) -> Evaluation:
        """Nothing to recommend."""
        return Evaluation(
            recommended=MappingProxyType({}),
            score=0.0,
            reasons=(f"trust is disabled: the configured level {facts.ceiling} applies",),
        )
