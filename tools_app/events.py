"""Live updates about invocations, sent over the channel layer after commit."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from tools_app.models import TERMINAL_STATUSES


def invocation_group(invocation_id: Any) -> str:
    return f"invocation.{invocation_id}"


def publish_invocation_status(invocation_id: Any, status: str) -> None:
    """Tell whoever waits on this invocation that its status changed."""
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(
        invocation_group(invocation_id), {"type": "invocation.status", "status": status}
    )


async def wait_for_terminal(invocation_id: Any, *, timeout: float, current_status: Any) -> None:
    """Return when the invocation reaches a terminal status or `timeout` seconds pass.

    Subscribes first, then reads the status, so an update between the two is never
    missed; then sleeps on the channel layer (no database polling).
    """
    if timeout <= 0:
        return
    layer = get_channel_layer()
    if layer is None:
        return
    channel = await layer.new_channel()
    group = invocation_group(invocation_id)
    await layer.group_add(group, channel)
    try:
        if await current_status() in TERMINAL_STATUSES:
            return
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=remaining)
            except TimeoutError:
                return
            if message.get("status") in TERMINAL_STATUSES:
                return
    finally:
        await layer.group_discard(group, channel)
