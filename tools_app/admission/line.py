"""The line of an agent's waiting calls: which start when slots free.

An agent runs at most ``cap`` calls at once (sent to a worker or running); a batch
member also counts against its batch's own limit. Waiting calls start oldest first;
one held back only by its batch's limit does not block the agent's later calls.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class WaitingCall:
    id: uuid.UUID
    batch_id: uuid.UUID | None = None
    batch_limit: int | None = None


@dataclass(frozen=True)
class Place:
    """Where a waiting call stands: ``position`` 1 starts at the next free slot;
    ``ahead_for_agent`` counts the agent's calls before it, running or waiting."""

    position: int
    ahead_for_agent: int


def calls_to_start(
    *,
    cap: int,
    in_flight: int,
    in_flight_by_batch: Mapping[uuid.UUID, int],
    waiting: Sequence[WaitingCall],
) -> list[uuid.UUID]:
    """The waiting calls (in line order) that start now."""
    free = cap - in_flight
    busy = dict(in_flight_by_batch)
    started: list[uuid.UUID] = []
    for call in waiting:
        if free <= 0:
            break
        if call.batch_id is not None and call.batch_limit is not None:
            if busy.get(call.batch_id, 0) >= call.batch_limit:
                continue
            busy[call.batch_id] = busy.get(call.batch_id, 0) + 1
        started.append(call.id)
        free -= 1
    return started


def starts_at_once(*, cap: int, in_flight: int, waiting: int) -> bool:
    """Whether a new call (no batch limit) may skip the line: a free slot and nobody
    waiting before it."""
    return waiting == 0 and in_flight < cap


def place_in_line(*, waiting_before: int, in_flight: int) -> Place:
    return Place(position=waiting_before + 1, ahead_for_agent=waiting_before + in_flight)
