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
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_MAX_NAME = 128


def name_words(name: str) -> list[str]:
    """Lower-case words of a key name: `X-ApiKey_id` → ['x', 'api', 'key', 'id']."""
    return [word.lower() for word in _WORD.findall(name[:_MAX_NAME])]


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True when a key or header name says its value is a secret."""
    words = name_words(name)
    if any(word in SECRET_WORDS for word in words):
        return True
    return any(pair in SECRET_WORD_PAIRS for pair in itertools.pairwise(words))
