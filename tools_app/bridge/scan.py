"""PURE: what an upstream tool's definition hides from the person who approves it.

Every string an agent's model would read is checked: the title, the description,
and every string inside the schemas and annotations (titles, descriptions, enum
values, defaults, examples, property names). A definition that cannot be walked
is itself a finding, so a scanner failure holds the tool instead of passing it.

Names are checked against the other tools the agent could see: a name that only
differs by case, separators or look-alike letters imitates that tool; a name
mixing scripts (Cyrillic ``а`` among Latin letters) is a homoglyph whatever it
imitates.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Final

from confusable_homoglyphs import confusables

from common.vocabulary.names import name_key, name_skeleton
from tools_app.bridge.definitions import UpstreamTool
from tools_app.sanitize.controls import INVISIBLE

MAX_DEPTH: Final = 64


class Severity(IntEnum):
    INFO = 10
    LOW = 20
    MEDIUM = 30
    HIGH = 40
    CRITICAL = 50

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            allowed = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r}; allowed: {allowed}") from None


@dataclass(frozen=True)
class Finding:
    """One thing a reviewer should see, where it is, and how bad it is."""

    severity: Severity
    code: str
    field: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {
            "severity": self.severity.label,
            "code": self.code,
            "field": self.field,
            "reason": self.reason,
        }


# --- hidden characters --------------------------------------------------------

_TAG = re.compile("[\U000e0000-\U000e007f]")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u180e]")


def _hidden(field: str, text: str) -> Iterator[Finding]:
    for pattern, code, label in (
        (_TAG, "tag_character", "a tag character (invisible ASCII)"),
        (_BIDI, "bidi_control", "a bidi control (reorders what is shown)"),
        (_ZERO_WIDTH, "zero_width", "a zero-width character"),
    ):
        match = pattern.search(text)
        if match:
            yield Finding(
                Severity.CRITICAL,
                code,
                field,
                f"{field} contains {label} U+{ord(match.group()):04X}, invisible to the person "
                "who reviews it but read by the model",
            )
            return
    other = INVISIBLE.search(text)  # the sanitiser's own set, one compiled pass
    if other is not None:
        yield Finding(
            Severity.HIGH,
            "invisible_character",
            field,
            f"{field} contains the invisible character U+{ord(other.group()[0]):04X}",
        )


# --- text addressed to the model ---------------------------------------------

_PHRASES: Final[tuple[tuple[Severity, str, str, str], ...]] = (
    (
        Severity.CRITICAL,
        "instruction_override",
        "asks the model to ignore its instructions",
        r"\b(?:ignore|disregard|forget|override|skip)\b(?:\s+(?:all|any|the|your|of|my|these))*"
        r"\s+(?:previous|prior|earlier|above|preceding|former|system|other)\s+"
        r"(?:instructions?|prompts?|messages?|rules|directions|guidelines|context)",
    ),
    (
        Severity.CRITICAL,
        "concealment",
        "tells the model to hide something from the user",
        r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|mention(?:ing)?|"
        r"notify(?:ing)?|reveal(?:ing)?|show(?:ing)?|alert(?:ing)?)\s+(?:this\s+to\s+)?"
        r"(?:the\s+|your\s+)?(?:user|human|person|operator)",
    ),
    (
        Severity.HIGH,
        "model_tag",
        "wraps text in a tag addressed to the model",
        r"</?\s*(?:important|system|instructions?|secret|hidden|admin|assistant)\s*>",
    ),
    (
        Severity.HIGH,
        "role_header",
        "imitates a system or assistant message",
        r"(?m)^\s*(?:#+\s*)?(?:system|assistant|developer)\s*:|<\|[a-z_]*\|>|\[/?INST\]|<</?SYS>>",
    ),
    (
        Severity.HIGH,
        "sensitive_file",
        "points the model at credentials",
        r"~/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|\.aws/credentials|/etc/shadow",
    ),
    (
        Severity.MEDIUM,
        "secret_reference",
        "mentions where secrets are kept",
        r"(?<![\w.])\.env\b|\bmcp\.json\b|\bapi[_ -]?keys?\b|/etc/passwd",
    ),
    (
        Severity.MEDIUM,
        "addressed_to_model",
        "gives orders to the model rather than describing the tool",
        r"\byou\s+(?:must|have\s+to|need\s+to|are\s+required\s+to|should\s+always)\b|"
        r"\b(?:before|after)\s+(?:using|calling)\s+(?:this|any)\s+tool\b|"
        r"\b(?:AI|assistant|model|LLM)\s*,?\s+(?:must|should)\b",
    ),
)
_PHRASE_RE: Final = tuple(
    (severity, code, what, re.compile(pattern, re.IGNORECASE))
    for severity, code, what, pattern in _PHRASES
)

# A link whose query or path is a template the model fills in sends data out.
_URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s\"'<>]+", re.IGNORECASE)
_TEMPLATE = re.compile(r"\{\{?[^{}]*\}\}?|\$\{?[A-Za-z_]+\}?|%[sd]|<[A-Za-z_ ]+>|\[[A-Z_ ]+\]")


def _phrases(field: str, text: str) -> Iterator[Finding]:
    folded = unicodedata.normalize("NFKC", text)
    for severity, code, what, pattern in _PHRASE_RE:
        match = pattern.search(folded)
        if match:
            quoted = match.group().strip()[:80]
            yield Finding(severity, code, field, f"{field} {what}: {quoted!r}")
    for match in _URL.finditer(folded):
        url = match.group()
        if _TEMPLATE.search(url) or re.search(r"[?&][^=&]+=(?:$|&)", url):
            yield Finding(
                Severity.HIGH,
                "exfiltration_link",
                field,
                f"{field} holds a link with a placeholder the model would fill in, a way to "
                f"send data out: {url[:120]!r}",
            )
        else:
            yield Finding(Severity.LOW, "link", field, f"{field} holds a link: {url[:120]!r}")


def scan_text(field: str, text: str) -> list[Finding]:
    """Findings in one string a model reads."""
    return [*_hidden(field, text), *_phrases(field, text)]


# --- walking a definition ----------------------------------------------------


class _TooDeepError(ValueError):
    pass


def _strings(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > MAX_DEPTH:
        raise _TooDeepError(path)
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            if isinstance(key, str):
                yield f"{path} (key)", key
            yield from _strings(value, f"{path}.{key}", depth + 1)
    elif isinstance(node, list | tuple):
        for index, item in enumerate(node):
            yield from _strings(item, f"{path}[{index}]", depth + 1)


def _definition_texts(tool: UpstreamTool) -> Iterator[tuple[str, str]]:
    if tool.title:
        yield "title", tool.title
    yield "description", tool.description
    for part in ("input_schema", "output_schema", "annotations"):
        yield from _strings(getattr(tool, part), part)


# --- names --------------------------------------------------------------------

_SEPARATORS = re.compile(r"[\s_\-.:/]+")


@functools.lru_cache(maxsize=4096)
def _loose_skeleton(name: str) -> str:
    """Look-alike key that also ignores separators (``read-file`` ~ ``read_file``)."""
    return _SEPARATORS.sub("", name_skeleton(name))


def _name_findings(
    tool: UpstreamTool, others: Iterable[str], builtins: Iterable[str]
) -> Iterator[Finding]:
    name = tool.name
    bad = next((ch for ch in name if unicodedata.category(ch)[0] in "CZ"), None)
    if bad is not None:
        yield Finding(
            Severity.CRITICAL,
            "name_hidden_character",
            "name",
            f"the name {name!r} contains the whitespace, control or invisible character "
            f"U+{ord(bad):04X}",
        )
    if confusables.is_dangerous(name):
        yield Finding(
            Severity.HIGH,
            "name_homoglyph",
            "name",
            f"the name {name!r} mixes scripts with look-alike letters (a homoglyph): it reads "
            f"as {name_skeleton(name)!r}",
        )
    elif not name.isascii():
        yield Finding(
            Severity.MEDIUM,
            "name_non_ascii",
            "name",
            f"the name {name!r} has letters outside ASCII; check it is not meant to look like "
            "another",
        )
    key = name_key(name)
    looks = {_loose_skeleton(name), _loose_skeleton(tool.contract_name)}
    for builtin in builtins:
        if name_key(builtin) == key:
            yield Finding(
                Severity.MEDIUM,
                "shadows_builtin",
                "name",
                f"the tool has the name of the built-in tool {builtin!r}; agents see it as "
                f"{tool.contract_name!r}, but a model may take one for the other",
            )
        elif _loose_skeleton(builtin) in looks:
            yield Finding(
                Severity.HIGH,
                "imitates_builtin",
                "name",
                f"{tool.contract_name!r} looks like the built-in tool {builtin!r} (case, "
                "separators or look-alike letters)",
            )
    own_key, own_loose = name_key(tool.contract_name), _loose_skeleton(tool.contract_name)
    for other in others:
        if name_key(other) == own_key:
            yield Finding(
                Severity.CRITICAL,
                "duplicate_name",
                "name",
                f"{tool.contract_name!r} is listed more than once (names compared without case)",
            )
        elif _loose_skeleton(other) == own_loose:
            yield Finding(
                Severity.HIGH,
                "imitates_tool",
                "name",
                f"{tool.contract_name!r} looks like the tool {other!r} (case, separators or "
                "look-alike letters)",
            )


def scan_tool(
    tool: UpstreamTool, *, others: Iterable[str] = (), builtins: Iterable[str] = ()
) -> list[Finding]:
    """Every finding for ``tool``, worst first.

    ``others``: contract names (``<server>__<tool>``) of the other tools an agent
    could see beside it, from this server and the others; ``builtins``: the
    console's own tool names.
    """
    findings = list(_name_findings(tool, others, builtins))
    try:
        texts = list(_definition_texts(tool))
    except _TooDeepError as exc:
        texts = []
        findings.append(
            Finding(
                Severity.CRITICAL,
                "unreadable",
                str(exc),
                f"the definition nests deeper than {MAX_DEPTH} levels at {exc}; it cannot be "
                "checked, so it is held",
            )
        )
    for field, text in texts:
        findings.extend(scan_text(field, text))
    return sorted(findings, key=lambda f: -f.severity)


def blocking(findings: Iterable[Finding], threshold: Severity) -> list[Finding]:
    """The findings at or above ``threshold``: each alone holds the tool."""
    return [f for f in findings if f.severity >= threshold]
