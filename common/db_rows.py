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

from django.db import connections, transaction
from django.db.models import Field, Model

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


@dataclass(frozen=True)
class _Insert:
    sql: str
    fields: tuple[Any, ...]
    returning: Any  # the auto primary key the database assigns, or None


_inserts: dict[tuple[type[Model], str, str, bool], _Insert] = {}


def _insert_statement(model: type[Model], using: str, ignore_conflicts: bool) -> _Insert:
    connection = connections[using]
    key = (model, using, connection.vendor, ignore_conflicts)
    found = _inserts.get(key)
    if found is not None:
        return found
    quote = connection.ops.quote_name
    pk = model._meta.pk
    auto = pk if pk is not None and getattr(pk, "db_returning", False) else None
    fields = tuple(f for f in model._meta.local_concrete_fields if f is not auto)
    columns = ", ".join(quote(str(f.column)) for f in fields)
    values = ", ".join(["%s"] * len(fields))
    verb = "INSERT"
    suffix = ""
    if ignore_conflicts:
        if connection.vendor == "postgresql":
            suffix = " ON CONFLICT DO NOTHING"
        else:
            verb = "INSERT OR IGNORE"
    if auto is not None and connection.features.can_return_columns_from_insert:
        suffix += f" RETURNING {quote(str(auto.column))}"
    table = quote(model._meta.db_table)
    sql = f"{verb} INTO {table} ({columns}) VALUES ({values}){suffix}"
    built = _inserts[key] = _Insert(sql, fields, auto)
    return built


def insert_instance(obj: Model, using: str = "default", *, ignore_conflicts: bool = False) -> bool:
    """Insert ``obj`` as ``obj.save()`` would on its first save, without compiling a
    query each time; False when ``ignore_conflicts`` skipped it.

    For the rows every call writes. Values go through the fields' own ``pre_save`` and
    ``get_db_prep_save`` (auto timestamps, JSON adaptation); no model signals are sent
    (none are connected to these models). A value that is an expression (a database
    default left to the database) is saved by the ORM instead.
    """
    model = type(obj)
    statement = _insert_statement(model, using, ignore_conflicts)
    connection = connections[using]
    params = _save_params(obj, statement.fields, connection)
    if params is None:
        if ignore_conflicts:
            return bool(model._default_manager.bulk_create([obj], ignore_conflicts=True))
        obj.save(force_insert=True, using=using)
        return True
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        if statement.returning is not None:
            if connection.features.can_return_columns_from_insert:
                row = cursor.fetchone()
                if row is None:  # skipped by ON CONFLICT DO NOTHING
                    return False
                setattr(obj, statement.returning.attname, row[0])
            else:
                setattr(obj, statement.returning.attname, cursor.lastrowid)
        inserted = cursor.rowcount != 0
    obj._state.adding = False
    obj._state.db = using
    return inserted


def _save_params(obj: Model, fields: Sequence[Any], connection: Any) -> list[Any] | None:
    """The values ``obj.save()`` would send for ``fields``; None when one is an expression."""
    raw = [field.pre_save(obj, add=True) for field in fields]
    if any(hasattr(value, "as_sql") for value in raw):
        return None
    return [
        field.get_db_prep_save(value, connection) for field, value in zip(fields, raw, strict=True)
    ]


_with_child: dict[tuple[type[Model], type[Model], str, str], tuple[str, tuple[Any, ...]]] = {}


def _with_child_statement(
    parent: type[Model], child: type[Model], link: str, using: str
) -> tuple[str, tuple[Any, ...]]:
    """One INSERT of a parent row and one child row pointing at it (PostgreSQL): the
    child's fields other than the link, in the order of their parameters."""
    connection = connections[using]
    key = (parent, child, link, using)
    found = _with_child.get(key)
    if found is not None:
        return found
    quote = connection.ops.quote_name
    first = _insert_statement(parent, using, ignore_conflicts=False)
    second = _insert_statement(child, using, ignore_conflicts=False)
    link_field: Any = child._meta.get_field(link)
    rest = tuple(f for f in second.fields if f is not link_field)
    columns = ", ".join(quote(str(f.column)) for f in (link_field, *rest))
    values = ", ".join(["(SELECT k FROM p)", *(["%s"] * len(rest))])
    child_pk = quote(str(second.returning.column))
    sql = (
        f"WITH p (k) AS ({first.sql})"  # noqa: S608 (names from the models' metadata)
        f" INSERT INTO {quote(child._meta.db_table)} ({columns}) VALUES ({values})"
        f" RETURNING {quote(str(link_field.column))}, {child_pk}"
    )
    built = _with_child[key] = (sql, rest)
    return built


def insert_with_child(parent: Model, child: Model, link: str, using: str = "default") -> None:
    """Insert ``parent``, then ``child`` whose foreign key ``link`` points at it, as
    ``insert_instance`` would one after the other; on PostgreSQL in one statement
    (one round trip instead of two). Both must have an auto primary key."""
    connection = connections[using]
    parent_model, child_model = type(parent), type(child)
    statement = _insert_statement(parent_model, using, ignore_conflicts=False)
    fast = (
        connection.vendor == "postgresql"
        and statement.returning is not None
        and _insert_statement(child_model, using, ignore_conflicts=False).returning is not None
    )
    params = _save_params(parent, statement.fields, connection) if fast else None
    sql, rest = _with_child_statement(parent_model, child_model, link, using) if fast else ("", ())
    child_params = _save_params(child, rest, connection) if params is not None else None
    if params is None or child_params is None:
        insert_instance(parent, using)
        link_field: Any = child_model._meta.get_field(link)
        setattr(child, link_field.attname, parent.pk)
        insert_instance(child, using)
        return
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute(sql, [*params, *child_params])
        row = cursor.fetchone()
    assert row is not None  # an INSERT ... RETURNING without conflicts returns its row
    setattr(parent, statement.returning.attname, row[0])
    link_field = child_model._meta.get_field(link)
    setattr(child, link_field.attname, row[0])
    link_field.set_cached_value(child, parent)
    child_pk: Any = child_model._meta.pk
    setattr(child, child_pk.attname, row[1])
    for obj in (parent, child):
        obj._state.adding = False
        obj._state.db = using


@dataclass(frozen=True)
class _Update:
    sql: str
    fields: tuple[Any, ...]
    among: Any  # the field whose value must be one of the given ones


_updates: dict[tuple[type[Model], str, str, tuple[str, ...], str, int], _Update] = {}


def _update_statement(
    model: type[Model], using: str, names: tuple[str, ...], among: str, count: int
) -> _Update:
    connection = connections[using]
    key = (model, using, connection.vendor, names, among, count)
    found = _updates.get(key)
    if found is not None:
        return found
    quote = connection.ops.quote_name
    meta = model._meta
    fields = tuple(_concrete(meta.get_field(name)) for name in names)
    if any(f.primary_key for f in fields):
        raise ValueError(f"the primary key is not set here: {names}")
    condition = _concrete(meta.get_field(among))
    assert meta.pk is not None
    sets = ", ".join(f"{quote(str(f.column))} = %s" for f in fields)
    choices = ", ".join(["%s"] * count)
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {sets} "  # noqa: S608 (names from the model)
        f"WHERE {quote(str(meta.pk.column))} = %s AND {quote(str(condition.column))} IN ({choices})"
    )
    built = _updates[key] = _Update(sql, fields, condition)
    return built


def _concrete(field: Any) -> Field[Any, Any]:
    if not isinstance(field, Field) or not field.concrete:
        raise ValueError(f"{field} is not a column of its model")
    return field


def update_if_among(
    model: type[Model],
    *,
    pk: Any,
    field: str,
    among: Sequence[Any],
    values: dict[str, Any],
    using: str = "default",
) -> int | None:
    """``model.objects.filter(pk=pk, <field>__in=among).update(**values)`` without
    compiling a query each time; the number of rows changed.

    For the compare-and-set every call runs. Values go through the fields'
    ``get_db_prep_save``, as ``QuerySet.update`` sends them. None (nothing done) when a
    value is an expression or a model instance, or ``among`` is empty: the caller uses
    the ORM then.
    """
    if not among or any(
        hasattr(value, "resolve_expression") or isinstance(value, Model)
        for value in values.values()
    ):
        return None
    names = tuple(values)
    statement = _update_statement(model, using, names, field, len(among))
    connection = connections[using]
    meta = model._meta
    assert meta.pk is not None
    params = [
        f.get_db_prep_save(values[name], connection)
        for f, name in zip(statement.fields, names, strict=True)
    ]
    params.append(meta.pk.get_db_prep_value(pk, connection))
    params.extend(statement.among.get_db_prep_value(value, connection) for value in among)
    # As QuerySet.update: a failure inside a transaction marks it for rollback.
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        return int(cursor.rowcount)
