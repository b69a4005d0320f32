"""Masking on cards (pure): secret-named and token-shaped values never reach the screen."""

from __future__ import annotations

from approvals_app.cards.masking import MASK, looks_secret, mask_arguments, mask_header


def test_authorization_and_cookie_headers_are_masked_whatever_their_value() -> None:
    for name in ("Authorization", "proxy-authorization", "Cookie", "X-Api-Key"):
        assert mask_header(name, "anything") == (MASK, True)


def test_a_token_shaped_value_is_masked_under_a_benign_name() -> None:
    assert mask_header("X-Request", "sk-live-9aZ8bY7cX6dW5eV4fU3gT2")[1]
    assert looks_secret("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIzNDU2")


def test_benign_values_are_shown() -> None:
    for name, value in (
        ("Accept", "application/json"),
        ("User-Agent", "synthorg-client/1.0 (linux)"),
        ("Content-Type", "text/plain; charset=utf-8"),
        ("If-None-Match", "2024-01-01"),
    ):
        assert mask_header(name, value) == (value, False)


def test_secret_named_keys_are_masked_at_any_depth_and_other_values_kept() -> None:
    masked = mask_arguments(
        {
            "config": {"password": "hunter2", "user": "ann"},
            "headers": {"X-Id": "Zq81mPx07LkV3nB2cY5tR9wE"},
        }
    )
    assert masked == {"config": {"password": MASK, "user": "ann"}, "headers": {"X-Id": MASK}}
