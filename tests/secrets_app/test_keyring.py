"""The key ring: Fernet at rest, newest key first, rotation without a gap."""

from __future__ import annotations

import pytest

from secrets_app.keyring import KeyRing, SecretsKeyError, SecretValueUnreadableError, new_key


def test_a_value_round_trips_and_is_not_stored_in_clear() -> None:
    ring = KeyRing.from_keys([new_key()])
    token = ring.encrypt("ghp_example-value-123")
    assert "ghp_example" not in token
    assert ring.decrypt(token) == "ghp_example-value-123"


def test_a_new_key_in_front_reads_old_values_and_rotation_moves_them() -> None:
    old, fresh = new_key(), new_key()
    token = KeyRing.from_keys([old]).encrypt("value-under-the-old-key")
    both = KeyRing.from_keys([fresh, old])
    assert both.decrypt(token) == "value-under-the-old-key"
    rotated = both.rotate(token)
    # Positive control: the newest key alone reads the rotated value ...
    assert KeyRing.from_keys([fresh]).decrypt(rotated) == "value-under-the-old-key"
    # ... and the attack: it cannot read the value that was not rotated.
    with pytest.raises(SecretValueUnreadableError):
        KeyRing.from_keys([fresh]).decrypt(token)


def test_a_key_that_is_not_fernet_is_refused_without_echoing_it() -> None:
    with pytest.raises(SecretsKeyError) as refused:
        KeyRing.from_keys([new_key(), "not-a-key-at-all"])
    assert "secrets key 2" in str(refused.value)
    assert "not-a-key-at-all" not in str(refused.value)
    with pytest.raises(SecretsKeyError, match="no secrets key"):
        KeyRing.from_keys([" ", ""])
