"""The webhook signature: what a receiver checks, and what it refuses."""

from __future__ import annotations

from notifications_app.signing import sign, verify

KEY = "k" * 32
BODY = b'{"event":"new"}'


def test_a_signature_verifies_within_the_window() -> None:
    header = sign(KEY, BODY, 1_000_000)
    assert header.startswith("t=1000000,v1=")
    assert verify(KEY, BODY, header, now=1_000_100)


def test_a_changed_body_key_or_time_is_refused() -> None:
    header = sign(KEY, BODY, 1_000_000)
    assert not verify(KEY, BODY + b" ", header, now=1_000_000)
    assert not verify("other" * 8, BODY, header, now=1_000_000)
    moved = header.replace("t=1000000", "t=1000001")
    assert not verify(KEY, BODY, moved, now=1_000_000)


def test_a_replay_past_the_window_and_garbage_are_refused() -> None:
    header = sign(KEY, BODY, 1_000_000)
    assert not verify(KEY, BODY, header, now=1_000_000 + 301)
    assert not verify(KEY, BODY, "", now=1_000_000)
    assert not verify(KEY, BODY, "t=x,v1=00", now=1_000_000)
