"""PURE: `${secret:NAME}` references in a call's arguments, and where they may stand.

A reference is substituted by the worker only in a slot meant for a credential:
the value then goes where it is needed (a request header) and nowhere else the
agent could read it back. A reference anywhere else (a URL, a body, a command
line) is refused at submission, so no tool ever sees a half-used secret.

Slots per tool (`SECRET_SLOTS`):
- ``http_request``: the values of ``headers`` (``"Authorization": "Bearer ${secret:GH}"``);
- ``shell_command`` and ``code_runner``: the values of ``secret_env``
  (``{"DEPLOY_TOKEN": "${secret:DEPLOY_TOKEN}"}``): sealed (``SEALED_TOOLS``): the
  program's environment holds the reference as a placeholder, and the egress proxy
  adds the value to requests to the hosts its grant names (see
  ``tools_app.builtin.secret_env``);
- ``git_clone`` and ``git_push``: ``credential`` (``"${secret:GH_TOKEN}"``), sealed the
  same way: git in the sandbox never holds it, the proxy adds it to the remote's
  requests when the grant names the remote's host (``--inject basic:<user>`` for most
  git servers).
Upstream MCP servers take their credentials from configuration, not from
arguments: the bridge asks the broker for them by name (`secrets_app.services`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

# `${secret:` up to the next `}`; what is inside is checked as a name.
REFERENCE: Final = re.compile(r"\$\{secret:([^{}]*)\}")
# A secret's name: letters, digits, `_`, `.`, `-`; a letter or `_` first.
NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
NAME_RULE: Final = (
    "1 to 100 characters: letters, digits, '_', '.' and '-', starting with a letter or '_'"
)
# `*` stands for any key of an object.
ANY_KEY: Final = "*"
SECRET_SLOTS: Final[Mapping[str, tuple[tuple[str, ...], ...]]] = MappingProxyType(
    {
        "http_request": (("headers", ANY_KEY),),
        "shell_command": (("secret_env", ANY_KEY),),
        "code_runner": (("secret_env", ANY_KEY),),
        "git_clone": (("credential",),),
        "git_push": (("credential",),),
    }
)

# Tools whose secret slots feed a program the agent controls: their values are sealed
# (added by the egress proxy on the way out, to the grant's hosts); the program holds
# the reference itself as a placeholder. A grant for one of them names its hosts.
SEALED_TOOLS: Final = frozenset({"shell_command", "code_runner", "git_clone", "git_push"})

Path = tuple[str | int, ...]


class SecretReferenceError(Exception):
    """A reference that cannot be used where it stands; `reason` is safe to show an agent."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class SecretReference:
    name: str
    path: Path
    # Found in an object's key (which is never a slot), not in a value.
    in_key: bool = False

    @property
    def where(self) -> str:
        return display_path(self.path)


def display_path(path: Path) -> str:
    return ".".join(["arguments", *(str(part) for part in path)])


def is_valid_name(name: str) -> bool:
    return NAME.fullmatch(name) is not None


def _strings(value: Any, path: Path) -> Iterator[tuple[Path, str, bool]]:
    if isinstance(value, str):
        yield path, value, False
    elif isinstance(value, Mapping):
        for key, item in value.items():
            # A key is never a slot: a reference there is found and refused.
            yield (*path, str(key)), str(key), True
            yield from _strings(item, (*path, str(key)))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _strings(item, (*path, index))


def find_references(arguments: Mapping[str, Any]) -> list[SecretReference]:
    """Every `${secret:…}` in the arguments' strings (and keys), in order."""
    found = []
    for path, text, in_key in _strings(arguments, ()):
        for match in REFERENCE.finditer(text):
            found.append(SecretReference(name=match.group(1), path=path, in_key=in_key))
    return found


def slot_allows(tool: str, path: Path) -> bool:
    """Whether `tool` takes a secret at `path` of its arguments."""
    for slot in SECRET_SLOTS.get(tool, ()):
        if len(slot) == len(path) and all(
            want == ANY_KEY or want == str(got) for want, got in zip(slot, path, strict=True)
        ):
            return True
    return False


def checked_references(tool: str, arguments: Mapping[str, Any]) -> list[SecretReference]:
    """The call's references, or SecretReferenceError for one that is malformed or misplaced.

    The reason names the place, never the name: a name that is not granted and
    one that does not exist must read the same.
    """
    references = find_references(arguments)
    for reference in references:
        if not is_valid_name(reference.name):
            raise SecretReferenceError(
                f"{reference.where} holds a malformed secret reference: write "
                f"${{secret:NAME}} with a NAME of {NAME_RULE}"
            )
        if reference.in_key or not slot_allows(tool, reference.path):
            raise SecretReferenceError(f"{reference.where} cannot hold a secret reference: {tool} "
                f"{slots_text(tool)}")  # fmt: skip
    return references


def slots_text(tool: str) -> str:
    slots = SECRET_SLOTS.get(tool, ())
    if not slots:
        return "takes no secrets"
    places = ", ".join(display_path(tuple(slot)) for slot in slots)
    return f"takes secrets only in {places}"


def substitute(
    arguments: Mapping[str, Any], values: Mapping[str, str], tool: str
) -> dict[str, Any]:
    """A copy of `arguments` with every reference in a slot replaced by its value.

    Only slots are rewritten; references must have been checked by
    `checked_references` (a name missing from `values` raises KeyError).
    """

    def walk(value: Any, path: Path) -> Any:
        if isinstance(value, str):
            if slot_allows(tool, path):
                return REFERENCE.sub(lambda m: values[m.group(1)], value)
            return value
        if isinstance(value, Mapping):
            return {key: walk(item, (*path, str(key))) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [walk(item, (*path, index)) for index, item in enumerate(value)]
        return value

    return dict(walk(dict(arguments), ()))
