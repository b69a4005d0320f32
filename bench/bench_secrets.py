"""Cost of the secrets broker's own steps for one call (no database).

- decrypting one stored value (Fernet, a ring of two keys: the newest and one
  being retired);
- finding, checking and substituting references in an http_request call's
  arguments (two headers, one of them a reference);
- sanitising a 64 KB result when the call used named secrets: the console's own
  secrets alone (the sanitiser's automaton cached), plus three values of the
  call seen before (cached), and plus three values never seen (the automaton for
  that set built during the call: what a call with fresh secrets pays).

Each figure is the time of one whole step, p50/p95/p99 over repeated runs (wall
time), printed as one JSON line per figure for ``bench/run.py``. Run alone with
``uv run python bench/bench_secrets.py``.

Measured on 2 cores shared with other work (so p95 and p99 are noisy): decrypt
0.008 ms; reference check and substitution 0.012 ms; sanitising 64 KB 30 ms with
the console's 8 secrets, 39 ms with 3 call secrets added (one echo redacted),
41 ms when the automaton for the call's secrets is built in the call.
"""

from __future__ import annotations

import json
import random
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import row  # after the path set-up
from secrets_app.keyring import KeyRing, new_key
from secrets_app.references import checked_references, substitute
from tools_app.sanitize import sanitize_output

SEED = 20_261_124
TEXT_BYTES = 64 * 1024
RUNS = 200
CONSOLE_SECRETS = [secrets.token_urlsafe(32) for _ in range(8)]
WORDS = ["the", "agent", "read", "a", "file", "status", "ok", "token", "worker", "queue"]


def _measure(step: Callable[[], object], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        step()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _text(rnd: random.Random, echo: str) -> str:
    words: list[str] = []
    size = 0
    while size < TEXT_BYTES:
        word = rnd.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    words.insert(len(words) // 2, echo)
    return " ".join(words)


def main() -> None:
    rnd = random.Random(SEED)
    ring = KeyRing.from_keys([new_key(), new_key()])
    token = ring.encrypt(secrets.token_urlsafe(40))
    print(json.dumps(row("secret decrypt (Fernet, 2 keys)", "ms", _measure(
        lambda: ring.decrypt(token), RUNS * 5), "one stored value")))  # fmt: skip

    arguments = {
        "url": "https://api.example.com/v1/items",
        "headers": {"Authorization": "Bearer ${secret:API_TOKEN}", "Accept": "application/json"},
    }
    values = {"API_TOKEN": secrets.token_urlsafe(32)}

    def substitution() -> object:
        checked_references("http_request", arguments)
        return substitute(arguments, values, "http_request")

    print(json.dumps(row("reference check + substitution", "ms", _measure(
        substitution, RUNS * 5), "http_request, 2 headers, 1 reference")))  # fmt: skip

    seen = [secrets.token_urlsafe(32) for _ in range(3)]
    text = _text(rnd, seen[0])

    def sanitise(known: list[str]) -> Callable[[], object]:
        return lambda: sanitize_output(text, known_secrets=known, max_chars=200_000)

    sanitise(CONSOLE_SECRETS)()
    sanitise(CONSOLE_SECRETS + seen)()
    print(json.dumps(row("sanitise 64 KB, console secrets", "ms", _measure(
        sanitise(CONSOLE_SECRETS), RUNS), "8 secrets, automaton cached")))  # fmt: skip
    print(json.dumps(row("sanitise 64 KB, + 3 call secrets", "ms", _measure(
        sanitise(CONSOLE_SECRETS + seen), RUNS), "automaton cached, one echo")))  # fmt: skip

    def fresh() -> object:
        return sanitize_output(
            text,
            known_secrets=CONSOLE_SECRETS + [secrets.token_urlsafe(32) for _ in range(3)],
            max_chars=200_000,
        )

    print(json.dumps(row("sanitise 64 KB, + 3 fresh call secrets", "ms", _measure(
        fresh, RUNS), "automaton built in the call")))  # fmt: skip


if __name__ == "__main__":
    main()
