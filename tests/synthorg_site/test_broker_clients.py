"""kombu's Redis channels share one client per channel (synthorg_site.broker_clients)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import current_app
from kombu import Connection

from synthorg_site.broker_clients import channel_client


@pytest.fixture
def channel() -> Iterator[Any]:
    with Connection(current_app.conf.broker_url) as connection:
        yield connection.default_channel


def _queue() -> str:
    return f"test.broker-clients.{uuid.uuid4().hex}"


def test_a_channel_sends_every_command_through_one_client(channel: Any) -> None:
    with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
        assert first is second is channel_client(channel)
    # A client handed in is the one used (kombu's own callers pass their pipeline's).
    given = channel._create_client()
    with channel.conn_or_acquire(given) as used:
        assert used is given


def test_a_channel_whose_pools_were_dropped_builds_its_client_on_the_new_pool(
    channel: Any,
) -> None:
    with channel.conn_or_acquire() as before:
        old_pool = before.connection_pool
    channel._disconnect_pools()  # as a closed channel or a forked child does
    with channel.conn_or_acquire() as after:
        assert after is not before
        assert after.connection_pool is channel.pool is not old_pool
        queue = _queue()
        try:
            after.lpush(queue, b"still works")
            assert after.llen(queue) == 1
        finally:
            after.delete(queue)


def test_threads_sending_through_the_shared_client_lose_nothing(channel: Any) -> None:
    queue, threads, each = _queue(), 8, 200
    errors: list[BaseException] = []

    def send(n: int) -> None:
        try:
            for i in range(each):
                with channel.conn_or_acquire() as client:
                    client.lpush(queue, f"{n}-{i}".encode())
        except BaseException as exc:  # reported below
            errors.append(exc)

    workers = [threading.Thread(target=send, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    try:
        with channel.conn_or_acquire() as client:
            values = set(client.lrange(queue, 0, -1))
    finally:
        channel_client(channel).delete(queue)
    assert not errors, errors
    assert values == {f"{n}-{i}".encode() for n in range(threads) for i in range(each)}


def test_a_task_sent_through_the_shared_client_arrives_whole() -> None:
    queue = _queue()
    sent = current_app.send_task(
        "tools_app.execute_invocation", args=["x"], queue=queue, ignore_result=True
    )
    with Connection(current_app.conf.broker_url) as connection:
        channel = connection.default_channel
        try:
            message = channel.basic_get(queue, no_ack=True)
            assert message is not None
            assert message.headers["id"] == sent.id
            assert message.headers["task"] == "tools_app.execute_invocation"
            assert message.decode()[0] == ["x"]
        finally:
            channel_client(channel).delete(queue)
