"""Model instances from one hand-written SQL row, as the ORM would build them.

For the few statements every agent call runs, compiling the ORM query costs
more than running it. A ``RowShape`` names the models a row carries (each under
a table alias); it gives the select list, and turns a row back into instances
through the same database converters the ORM's compiler applies, so the
values are exactly what ``select_related`` would have produced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models import Model

# A database converter and the column expression it is called with.
Converter = tuple[Callable[[Any, Any, Any], Any], Any]


@dataclass(frozen=True)
class _Part:
    model: type[Model]
    alias: str
    attnames: tuple[str, ...]
    converters: tuple[tuple[Converter, ...], ...]


class RowShape:
    """The columns of ``parts`` ((model, table alias), in order) in one row."""

    def __init__(self, parts: Sequence[tuple[type[Model], str]], using: str = "default") -> None:
        self.using = using
        connection = connections[using]
        built = []
        for model, alias in parts:
            fields = model._meta.concrete_fields
            converters = []
            for field in fields:
                column = field.get_col(alias)
                chain = (
                    *connection.ops.get_db_converters(column),
                    *column.get_db_converters(connection),
                )
                converters.append(tuple((convert, column) for convert in chain))
            built.append(_Part(model, alias, tuple(f.attname for f in fields), tuple(converters)))
        self._parts = tuple(built)

    def quote(self, name: object) -> str:
        return str(connections[self.using].ops.quote_name(str(name)))

    def select_list(self) -> str:
        """``alias."column", ...`` for every part, in row order."""
        return ", ".join(
            f"{part.alias}.{self.quote(getattr(field, 'column', None) or field.attname)}"
            for part in self._parts
            for field in part.model._meta.concrete_fields
        )

    def instances(self, row: Sequence[Any]) -> list[Any]:
        """One instance per part; None for a part whose primary key is NULL (an
        outer join that found nothing)."""
        connection = connections[self.using]
        out: list[Any] = []
        start = 0
        for part in self._parts:
            values = list(row[start : start + len(part.attnames)])
            start += len(part.attnames)
            pk_index = part.attnames.index(part.model._meta.pk.attname)
            if values[pk_index] is None:
                out.append(None)
                continue
            for index, chain in enumerate(part.converters):
                for convert, column in chain:
                    values[index] = convert(values[index], column, connection)
            out.append(part.model.from_db(self.using, list(part.attnames), values))
        return out
