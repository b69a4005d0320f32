"""Which names label a secret: `password`, `apiKey`, `AWS_SECRET_ACCESS_KEY`, `X-Auth-Token`.

A name is split into words (on punctuation and camelCase) and matched word by
word, so `max_tokens` or `author` are not mistaken for `token` or `auth`.
"""

from __future__ import annotations

import functools
import itertools
import re

SECRET_WORDS: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "pass",
        "secret",
        "secrets",
        "token",
        "apikey",
        "authorization",
        "auth",
        "credential",
        "credentials",
        "privatekey",
        "cookie",
        "sig",
        "signature",
    }
)
# Two adjacent words that name a secret only together (`api_key`, `privateKey`).
SECRET_WORD_PAIRS: frozenset[tuple[str, str]] = frozenset(
    {
        ("api", "key"),
        ("private", "key"),
        ("access", "key"),
        ("account", "key"),
        ("session", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("master", "key"),
        ("shared", "key"),
        ("connection", "string"),
    }
)
# Substrings every secret word or pair contains: a cheap first test for text
# scanning, before the name is split into words.
SECRET_NAME_HINTS: tuple[str, ...] = (
    "pass", "pwd", "secret", "token", "key", "auth", "credential", "cookie", "sig", "connection",
)  # fmt: skip
# Words that make a secret word describe the secret rather than hold it:
# `l1_token_budget`, `PASSWORD_MIN_LENGTH`, `token_type`, `secret_file`.
METADATA_WORDS: frozenset[str] = frozenset(
    {"budget", "count", "limit", "length", "len", "size", "max", "min", "num", "total",
     "ttl", "timeout", "lifetime", "expiry", "expires", "expiration", "type", "kind",
     "name", "file", "path", "dir", "url", "uri", "endpoint", "header", "policy"}
)  # fmt: skip
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_MAX_NAME = 128
# A path: absolute, home- or dot-relative, made of ordinary path characters.
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@%+:,=~/-]*")
# A path segment this long mixing cases and digits is a token, not a directory name.
_MIN_TOKEN_SEGMENT = 16
_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
# A number this long under a secret name may be a PIN or an account number.
_MAX_PLAIN_NUMBER_DIGITS = 7


def name_words(name: str) -> list[str]:
    """Lower-case words of a key name: `X-ApiKey_id` → ['x', 'api', 'key', 'id']."""
    return [word.lower() for word in _WORD.findall(name[:_MAX_NAME])]


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a key or header name says its value is a secret."""
    words = name_words(name)
    if any(word in METADATA_WORDS for word in words):
        return False
    if any(word in SECRET_WORDS for word in words):
        return True
    return any(pair in SECRET_WORD_PAIRS for pair in itertools.pairwise(words))


def not_a_secret(value: str) -> bool:
    """True for a value that says where or how much rather than being a secret,
    even under a secret-looking name: a file path (`PWD=/home/x`) or a short number
    (`token_budget=4000`)."""
    if _NUMBER.fullmatch(value):
        return sum(c.isdigit() for c in value) <= _MAX_PLAIN_NUMBER_DIGITS
    if _PATH.fullmatch(value):
        return "/" in value and not any(_token_like(part) for part in value.split("/"))
    return False


def _token_like(segment: str) -> bool:
    return (
        len(segment) >= _MIN_TOKEN_SEGMENT
        and any(c.islower() for c in segment)
        and any(c.isupper() for c in segment)
        and any(c.isdigit() for c in segment)
    )
