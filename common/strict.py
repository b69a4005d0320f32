"""A frozen pydantic base whose unknown-field errors name the allowed fields.

Pydantic's own ``extra="forbid"`` error says only "Extra inputs are not
permitted"; a person fixing a typo in a config file needs the list of what is
allowed, so the check runs first and says so.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic_core import PydanticCustomError


class StrictModel(BaseModel):
    """Frozen, extra fields forbidden, unknown fields reported with the allowed ones."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_unknown_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = [str(key) for key in data if key not in cls.model_fields]
            if unknown:
                raise PydanticCustomError(
                    "unknown_field",
                    "unknown field {field}; allowed fields: {allowed}",
                    {
                        "field": ", ".join(repr(u) for u in unknown),
                        "unknown": unknown,
                        "allowed": ", ".join(cls.model_fields),
                    },
                )
        return data
