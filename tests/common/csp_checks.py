"""What a strict Content-Security-Policy header says, and the check every page must pass."""

from __future__ import annotations

from typing import Any

HEADER = "Content-Security-Policy"
# Sources that would let an injected script run (or a script be made from a string).
UNSAFE_SCRIPT = ("'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "'strict-dynamic'",
                 "*", "data:", "blob:", "http:", "https:")  # fmt: skip
UNSAFE_STYLE = ("'unsafe-inline'", "'unsafe-hashes'", "*", "data:", "http:", "https:")


def directives(header: str) -> dict[str, list[str]]:
    """``{"script-src": ["'self'"], ...}``; names lower case, the first of a repeated one."""
    found: dict[str, list[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            found.setdefault(words[0].lower(), words[1:])
    return found


def strict_policy_problems(header: str | None) -> list[str]:
    """What is missing or too loose in ``header``; empty for a strict policy."""
    if not header:
        return [f"no {HEADER} header"]
    policy = directives(header)
    default = policy.get("default-src")
    problems = []
    if default != ["'self'"]:
        problems.append(f"default-src is {default}, not 'self'")
    for name in ("script-src", "script-src-elem", "script-src-attr"):
        sources = policy.get(name, default) or []
        loose = [s for s in sources if s.lower() in UNSAFE_SCRIPT]
        if loose:
            problems.append(f"{name} allows {loose}")
    for name in ("style-src", "style-src-elem", "style-src-attr"):
        sources = policy.get(name, default) or []
        loose = [s for s in sources if s.lower() in UNSAFE_STYLE]
        if loose:
            problems.append(f"{name} allows {loose}")
    for name in ("object-src", "base-uri", "frame-ancestors"):
        if policy.get(name) != ["'none'"]:
            problems.append(f"{name} is {policy.get(name)}, not 'none'")
    if policy.get("form-action") != ["'self'"]:
        problems.append(f"form-action is {policy.get('form-action')}, not 'self'")
    return problems


def assert_strict_policy(response: Any, where: str) -> None:
    """A test-client answer carries a strict policy."""
    problems = strict_policy_problems(response.get(HEADER))
    assert not problems, f"{where}: " + "; ".join(problems)
