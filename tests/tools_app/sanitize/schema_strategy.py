"""Hypothesis strategies for instances of the JSON Schemas the built-in tools declare.

Covers the keywords those output schemas use (`type`, `properties`, `required`,
`additionalProperties`, `items`); a schema using any other keyword is refused,
so a new keyword is noticed rather than silently ignored.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

_KNOWN = {"type", "properties", "required", "additionalProperties", "items", "description"}
_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "string": st.text(max_size=30),
    "integer": st.integers(-(2**40), 2**40),
    "number": st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "null": st.none(),
}


def instances(schema: dict[str, Any] | bool) -> st.SearchStrategy[Any]:
    """Values valid against `schema`."""
    if schema is True or schema == {}:
        return st.one_of(*_SCALARS.values())
    assert isinstance(schema, dict), schema
    unknown = set(schema) - _KNOWN
    assert not unknown, f"schema keywords this strategy does not cover: {sorted(unknown)}"
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind else list(_SCALARS)
    return st.one_of(*(_of_type(k, schema) for k in kinds))


def _of_type(kind: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if kind == "array":
        return st.lists(instances(schema.get("items", True)), max_size=4)
    if kind != "object":
        return _SCALARS[kind]
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    extra = schema.get("additionalProperties", True)

    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        value = {}
        for name, sub in properties.items():
            if name in required or draw(st.booleans()):
                value[name] = draw(instances(sub))
        if extra is not False:
            more = draw(st.dictionaries(st.text(max_size=8), instances(extra), max_size=3))
            value.update({k: v for k, v in more.items() if k not in properties})
        return value

    return objects()
