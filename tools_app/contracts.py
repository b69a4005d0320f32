"""The typed tool contract and the registry that admits contracts.

A tool is a contract, not a function: name, category, action type (defaulted
from the category), safety class, input and output JSON Schema (Draft 2020-12,
local ``$ref`` only), idempotency, the three disclosure levels (L1 summary and
cost tier; L2 description, examples and failure modes; L3 resources) and which
arguments are paths, URLs, hosts or commands. ``definition_hash`` is the
SHA-256 of the canonical JSON of the definition, stored and shown so that a
swapped description is detectable.

A tool whose effect depends on its arguments (a deploy to staging or to
production) declares the action types its calls may have and a resolver, a pure
function of the arguments and the config; ``for_call`` answers the contract of
one call, whose ``resolved_action_type`` is that call's, so the permission check,
the approval rules and the audit all read the same type.

``ToolRegistry.register`` refuses, with the reason, a schema that does not
compile, text over its length limit or carrying injection signatures, and a
name that collides with another after NFKC, case and confusable folding.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, Self

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import Field, PrivateAttr, model_validator
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from common.strict import StrictModel
from common.vocabulary.action_types import DEFAULT_ACTION_TYPES, ActionTypeRegistry
from common.vocabulary.categories import DEFAULT_ACTION_TYPE, SafetyClass, ToolCategory
from common.vocabulary.names import name_key, name_skeleton
from trust_app.policy.tool_view import ArgumentRole, ToolView

if TYPE_CHECKING:
    from common.config import SynthOrgConfig

CostTier = Literal["low", "medium", "high"]
Idempotency = Literal["required", "optional"]


class ContractError(ValueError):
    """Base class: a tool contract was refused; the message says why."""


class ContractSchemaInvalidError(ContractError):
    """An input or output schema does not compile under Draft 2020-12."""


class ContractSchemaRemoteRefError(ContractError):
    """A schema references something outside itself (a ``$ref`` not starting with '#')."""


class ContractTextTooLongError(ContractError):
    """A description or other agent-facing text is over its length limit."""


class ContractInjectionSignatureError(ContractError):
    """Agent-facing text carries a prompt-injection signature or hidden characters."""


class ContractNameInvalidError(ContractError):
    """The tool name is empty, too long, or contains invisible or control characters."""


class ContractNameCollisionError(ContractError):
    """The name equals or looks like an already registered one."""


class ContractArgumentRoleError(ContractError):
    """An argument role names an argument the input schema does not declare."""


class ContractActionTypeError(ContractError):
    """The action type is unknown, or the category has no default and none was given."""


class CallActionTypeError(ContractError):
    """A call's action type cannot be resolved from its arguments; the call is refused
    before anyone is asked. ``rule`` names the decision rule it is recorded under."""

    def __init__(self, reason: str, rule: str = "action_type_unresolved") -> None:
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


ActionTypeResolver = Callable[[Mapping[str, Any], Any], str]
"""``(arguments, config) -> action type``: pure; raises ``CallActionTypeError`` for a
call it cannot place."""


@dataclass(frozen=True, slots=True)
class ContractLimits:
    """Length limits for agent-facing text (characters)."""

    name: int = 64
    summary: int = 200
    description: int = 4000
    text: int = 2000  # each example description, failure mode, schema description
    resource: int = 100_000


DEFAULT_LIMITS: Final = ContractLimits()


class ToolExample(StrictModel):
    """One worked example of a call (L2)."""

    description: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None


class ToolResource(StrictModel):
    """An L3 resource: a guide, code sample or example trace, fetched on demand."""

    id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.\-]+$")
    media_type: str = Field(min_length=3, max_length=127, pattern=r"^[\w.+\-]+/[\w.+\-]+$")
    content: str


class ToolContract(StrictModel):
    """The typed definition of a tool."""

    name: str
    category: ToolCategory
    action_type: str | None = None
    safety_class: SafetyClass
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    # "required": a client should send a key, since retrying this (consequential)
    # call without one may run it twice. Advice to clients: the server never
    # refuses a call for lacking a key.
    idempotency: Idempotency = "optional"
    # True when running the same call twice has the effect of running it once; only
    # then is a call whose worker died mid-run retried instead of failed.
    idempotent: bool = False
    summary: str = Field(min_length=1)
    cost_tier: CostTier = "low"
    description: str = ""
    examples: tuple[ToolExample, ...] = ()
    failure_modes: tuple[str, ...] = ()
    resources: tuple[ToolResource, ...] = ()
    argument_roles: dict[str, ArgumentRole] = Field(default_factory=dict)
    # Per-call action types: what a call may resolve to, and how. Not part of the
    # definition's hash (a function has no canonical form); registration checks each
    # type is known, and resolution that each answer is one of them.
    call_action_types: tuple[str, ...] = Field(default=(), exclude=True)
    action_type_of_call: ActionTypeResolver | None = Field(default=None, exclude=True, repr=False)
    _call_action_type: str | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _default_action_type(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("action_type") is None:
            default = DEFAULT_ACTION_TYPE.get(str(data.get("category", "")))
            if default is not None:
                return {**data, "action_type": default}
        return data

    @model_validator(mode="after")
    def _action_type_given(self) -> ToolContract:
        if self.action_type is None:
            raise ValueError(
                f"category {self.category.value!r} has no default action type; declare one"
            )
        ids = [r.id for r in self.resources]
        if len(ids) != len(set(ids)):
            raise ValueError("resource ids must be unique")
        if (self.action_type_of_call is None) != (not self.call_action_types):
            raise ValueError("call_action_types and action_type_of_call go together")
        if self.call_action_types and self.action_type not in self.call_action_types:
            raise ValueError(
                f"the declared action type {self.action_type!r} must be one of "
                "call_action_types (the type a listing shows is one a call can have)"
            )
        return self

    @cached_property
    def definition_hash(self) -> str:
        """SHA-256 (hex) of the canonical JSON of the whole definition.

        Canonical: keys sorted, no insignificant whitespace, UTF-8, no NaN.
        Computed once per contract (every call reads it: submit, schema validators,
        the worker's check): the model is frozen, its schemas are never changed in
        place, and a copy made with changes computes its own (`model_copy`). Kept
        beside the fields, where pydantic's equality and dumps do not look.
        """
        canonical = json.dumps(
            self.model_dump(mode="json"),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; one made with changes computes its own definition hash."""
        copied = super().model_copy(update=update, deep=deep)
        if update:
            copied.__dict__.pop("definition_hash", None)
        return copied

    @property
    def resolved_action_type(self) -> str:
        """The action type of this call (``for_call``), else the declared one (defaulted
        from the category when not declared)."""
        if self._call_action_type is not None:
            return self._call_action_type
        assert self.action_type is not None
        return self.action_type

    def for_call(self, arguments: Mapping[str, Any], config: SynthOrgConfig) -> ToolContract:
        """The contract of one call: its action type resolved from ``arguments`` and
        ``config`` when the tool resolves per call, else this contract itself.

        Raises ``CallActionTypeError`` when the resolver cannot place the call, or
        answers a type the contract does not declare.
        """
        resolver = self.action_type_of_call
        if resolver is None:
            return self
        resolved = resolver(arguments, config)
        if resolved not in self.call_action_types:
            raise CallActionTypeError(
                f"{self.name} resolved its call to action type {resolved!r}, which it does "
                f"not declare ({', '.join(self.call_action_types)}); the call is refused"
            )
        call = self.model_copy()
        call._call_action_type = resolved
        return call

    def l1(self) -> dict[str, str]:
        """Level 1: what ``GET /api/v1/tools/`` lists."""
        return {
            "name": self.name,
            "category": self.category.value,
            "action_type": self.resolved_action_type,
            "safety_class": self.safety_class.value,
            "summary": self.summary,
            "cost_tier": self.cost_tier,
        }

    def l2(self) -> dict[str, Any]:
        """Level 2: the full body for ``GET /api/v1/tools/<name>/``."""
        return {
            "name": self.name,
            "category": self.category.value,
            "action_type": self.resolved_action_type,
            "safety_class": self.safety_class.value,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "examples": [e.model_dump(mode="json") for e in self.examples],
            "failure_modes": list(self.failure_modes),
            "resources": [r.id for r in self.resources],
            "definition_hash": self.definition_hash,
        }

    def resource(self, resource_id: str) -> ToolResource | None:
        """Level 3: one resource by id, or None."""
        return next((r for r in self.resources if r.id == resource_id), None)

    def policy_view(self, *, isolation: str | None = None, enabled: bool = True) -> ToolView:
        """The plain view the decision engine works on."""
        return ToolView(
            name=self.name,
            category=self.category.value,
            action_type=self.resolved_action_type,
            safety_class=self.safety_class.value,
            summary=self.summary,
            cost_tier=self.cost_tier,
            argument_roles=tuple((k, v.value) for k, v in self.argument_roles.items()),
            isolation=isolation,
            enabled=enabled,
        )


# --- text safety -------------------------------------------------------------

_HIDDEN_CHARACTERS: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "tag character": "[\U000e0000-\U000e007f]",
        "bidi control": "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]",
        "zero-width character": "[\u200b\u200c\u200d\u2060\ufeff\u180e]",
    }
)
_INJECTION_SIGNATURES: Final[MappingProxyType[str, str]] = MappingProxyType(
    {
        "instruction override": (
            r"\b(?:ignore|disregard|forget|override|skip)\b(?:\s+(?:all|any|the|your|of|my))*"
            r"\s+(?:previous|prior|earlier|above|preceding|former|system)\s+"
            r"(?:instructions?|prompts?|messages?|rules|directions|guidelines|context)"
        ),
        "role header": r"(?im)^\s*(?:#+\s*)?(?:system|assistant|developer)\s*:",
        "chat template token": r"<\|[a-z_]*\|>|<\|im_(?:start|end)|\[/?INST\]|<</?SYS>>",
        "role tag": r"</?\s*(?:system|assistant)\s*>",
    }
)
_HIDDEN_RE: Final = tuple((label, re.compile(p)) for label, p in _HIDDEN_CHARACTERS.items())
_INJECTION_RE: Final = tuple(
    (label, re.compile(p, re.IGNORECASE)) for label, p in _INJECTION_SIGNATURES.items()
)


def scan_text(field: str, text: str, limit: int) -> None:
    """Raise if ``text`` is over ``limit`` or carries an injection signature."""
    if len(text) > limit:
        raise ContractTextTooLongError(f"{field} is {len(text)} characters; the limit is {limit}")
    for label, pattern in _HIDDEN_RE:
        match = pattern.search(text)
        if match:
            raise ContractInjectionSignatureError(
                f"{field} contains a hidden {label} U+{ord(match.group()):04X}"
            )
    folded = unicodedata.normalize("NFKC", text)
    for label, pattern in _INJECTION_RE:
        match = pattern.search(folded)
        if match:
            raise ContractInjectionSignatureError(
                f"{field} carries an injection signature ({label}): {match.group().strip()!r}"
            )


def _schema_texts(node: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "title", "$comment") and isinstance(value, str):
                yield f"{path}.{key}", value
            else:
                yield from _schema_texts(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _schema_texts(item, f"{path}[{index}]")


def _texts(contract: ToolContract, limits: ContractLimits) -> Iterator[tuple[str, str, int]]:
    yield "summary", contract.summary, limits.summary
    yield "description", contract.description, limits.description
    for i, example in enumerate(contract.examples):
        yield f"examples[{i}].description", example.description, limits.text
    for i, mode in enumerate(contract.failure_modes):
        yield f"failure_modes[{i}]", mode, limits.text
    for resource in contract.resources:
        yield f"resources[{resource.id}].content", resource.content, limits.resource
    for schema_name in ("input_schema", "output_schema"):
        for path, text in _schema_texts(getattr(contract, schema_name), schema_name):
            yield path, text, limits.text


# --- schemas -----------------------------------------------------------------

_REF_KEYS: Final = ("$ref", "$dynamicRef", "$recursiveRef")


def _refs(node: object, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _REF_KEYS and isinstance(value, str):
                yield path, value
            else:
                yield from _refs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _refs(item, f"{path}[{index}]")


def _refuse_retrieval(uri: str) -> Any:
    raise ContractSchemaRemoteRefError(f"remote schema {uri!r} is never fetched")


def compile_schema(schema: dict[str, Any], field: str) -> Draft202012Validator:
    """Check and compile a schema; refuse remote ``$ref`` and unresolvable local ones."""
    for path, ref in _refs(schema, field):
        if not ref.startswith("#"):
            raise ContractSchemaRemoteRefError(
                f"{path}: $ref {ref!r} is remote; only local references ('#...') are allowed"
            )
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        location = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ContractSchemaInvalidError(
            f"{field} is not a valid Draft 2020-12 schema at {location}: {exc.message}"
        ) from exc
    resource = DRAFT202012.create_resource(schema)
    registry: Registry[Any] = Registry(retrieve=_refuse_retrieval).with_resource(  # type: ignore[call-arg]
        "", resource
    )
    resolver = registry.resolver()
    for path, ref in _refs(schema, field):
        try:
            resolver.lookup(ref)
        except (Unresolvable, ContractSchemaRemoteRefError) as exc:
            raise ContractSchemaInvalidError(f"{path}: $ref {ref!r} does not resolve") from exc
    return Draft202012Validator(schema, registry=registry)


# --- validation and registry -------------------------------------------------


def _check_name(name: str, limits: ContractLimits) -> None:
    if not name or len(name) > limits.name:
        raise ContractNameInvalidError(f"tool name must be 1 to {limits.name} characters")
    bad = next((ch for ch in name if unicodedata.category(ch)[0] in "CZ"), None)
    if bad is not None:
        raise ContractNameInvalidError(
            f"tool name {name!r} contains whitespace, control or invisible character "
            f"U+{ord(bad):04X}"
        )


def validate_contract(
    contract: ToolContract,
    *,
    limits: ContractLimits = DEFAULT_LIMITS,
    action_types: ActionTypeRegistry = DEFAULT_ACTION_TYPES,
) -> None:
    """Raise a ``ContractError`` subclass naming the first problem, else return."""
    _check_name(contract.name, limits)
    try:
        action_types.check_action_type(contract.resolved_action_type)
        for action_type in contract.call_action_types:
            action_types.check_action_type(action_type)
    except ValueError as exc:
        raise ContractActionTypeError(str(exc)) from exc
    if contract.input_schema.get("type") != "object":
        raise ContractSchemaInvalidError('input_schema must have "type": "object"')
    compile_schema(contract.input_schema, "input_schema")
    compile_schema(contract.output_schema, "output_schema")
    declared = contract.input_schema.get("properties", {})
    for argument, role in contract.argument_roles.items():
        if not isinstance(declared, dict) or argument not in declared:
            raise ContractArgumentRoleError(
                f"argument_roles names {argument!r} ({role.value}), which input_schema "
                "does not declare"
            )
    for field, text, limit in _texts(contract, limits):
        scan_text(field, text, limit)


class ToolRegistry:
    """The admitted tool contracts, looked up by normalised name.

    Registration validates the contract and refuses look-alike names; it is
    in-memory and holds no Django state.
    """

    def __init__(
        self,
        *,
        limits: ContractLimits = DEFAULT_LIMITS,
        action_types: ActionTypeRegistry = DEFAULT_ACTION_TYPES,
    ) -> None:
        self._limits = limits
        self._action_types = action_types
        self._by_key: dict[str, ToolContract] = {}
        self._by_skeleton: dict[str, ToolContract] = {}

    def register(self, contract: ToolContract) -> ToolContract:
        """Admit ``contract`` or raise a ``ContractError`` saying why not.

        Registering an identical definition again is a no-op.
        """
        validate_contract(contract, limits=self._limits, action_types=self._action_types)
        existing = self._by_skeleton.get(name_skeleton(contract.name))
        if existing is not None:
            if existing.definition_hash == contract.definition_hash:
                return existing
            same = name_key(existing.name) == name_key(contract.name)
            relation = "is already registered as" if same else "looks like registered tool"
            raise ContractNameCollisionError(
                f"tool name {contract.name!r} {relation} {existing.name!r} with a different "
                "definition; choose a clearly different name"
            )
        self._by_key[name_key(contract.name)] = contract
        self._by_skeleton[name_skeleton(contract.name)] = contract
        return contract

    def get(self, name: str) -> ToolContract | None:
        """The contract registered under ``name`` (case and whitespace folded), or None."""
        return self._by_key.get(name_key(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name_key(name) in self._by_key

    def __iter__(self) -> Iterator[ToolContract]:
        return iter(sorted(self._by_key.values(), key=lambda c: name_key(c.name)))

    def __len__(self) -> int:
        return len(self._by_key)
