"""Reads, updates and inserts that the ORM compiles once and then runs with new values.

Building a queryset and compiling it to SQL costs Django about 0.2-0.4 ms
of CPU per query here, several times what SQLite or PostgreSQL then needs
to answer an indexed lookup. On the append path (token lookup, chain head)
that was a quarter of the request. A CompiledRead asks the ORM for the SQL
once per thread and database alias, with a unique marker string standing
in for each parameter, and from then on only executes that SQL with the
request's values. Django still writes the SQL, quotes the names and
converts the results (UUIDs, datetimes, per backend), so nothing about the
query is written by hand.

A read's parameters are strings: they reach the database unchanged, which
is what makes the markers safe to substitute. A CompiledUpdate (the
entries quota's conditional charge, memory/quotas.py) also takes integers:
each stands compiled as a sentinel far outside any count a caller passes
(an integer field turns any marker object into a plain int), and is found
again by its value. A CompiledInsert (a memory entry's, memory/services.py)
needs no markers: the ORM prepares every value of each row, as save() does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, models, transaction
from django.db.models import QuerySet, sql
from django.db.models.signals import post_save, pre_save


class _Marker(str):
    """A parameter placeholder that cannot be mistaken for a real value."""


# Integer markers: no count, size or id a caller passes comes near -2**62.
_INTEGER_SENTINEL_BASE = -(2**62)


def _markers(strings: tuple[str, ...], integers: tuple[str, ...] = ()) -> dict[str, Any]:
    markers: dict[str, Any] = {name: _Marker(f"\x00gedweb-compiled:{name}\x00")
                               for name in strings}
    markers.update({name: _INTEGER_SENTINEL_BASE - index for index, name in enumerate(integers)})
    return markers


def _parameter_template(params: Any, markers: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """Per SQL parameter, (the name of a value given per call, its type) or (None, a constant).

    An integer keeps the type the backend gave it (PostgreSQL's psycopg
    Int8 for a bigint), so a value given later is sent as the ORM sends it.
    """
    by_string = {marker: name for name, marker in markers.items() if isinstance(marker, str)}
    by_integer = {marker: name for name, marker in markers.items() if not isinstance(marker, str)}
    # A constant the ORM put there itself never equals a marker: None,
    # booleans and real values are neither the markers' strings nor near -2**62.
    template: list[tuple[str | None, Any]] = []
    for p in params:
        if isinstance(p, str) and p in by_string:
            template.append((by_string[p], str))
        elif isinstance(p, int) and not isinstance(p, bool) and int(p) in by_integer:
            template.append((by_integer[int(p)], type(p)))
        else:
            template.append((None, p))
    missing = set(markers) - {name for name, _ in template if name}
    if missing:
        raise ValueError(f"the query does not use the parameters {sorted(missing)}")
    return template


class _OnConnection(Protocol):
    connection: Any


CompiledT = TypeVar("CompiledT", bound=_OnConnection)


class _PerConnection(Generic[CompiledT]):
    """A compiled statement per thread and database alias, made on first use.

    Django gives each thread its own connection objects, and a compiler
    belongs to one of them: a new connection compiles again.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def get(self, using: str, make: Callable[[], CompiledT]) -> CompiledT:
        cache: dict[str, CompiledT] = self._local.__dict__.setdefault("by_alias", {})
        compiled = cache.get(using)
        if compiled is None or compiled.connection is not connections[using]:
            compiled = cache[using] = make()
        return compiled


class _Compiled:
    def __init__(self, query: QuerySet[Any, dict[str, Any]], markers: dict[str, _Marker],
                 using: str) -> None:
        self.connection = connections[using]
        self.compiler = query.query.get_compiler(using=using)
        self.sql, params = self.compiler.as_sql()
        self.template = _parameter_template(params, markers)
        selected = self.compiler.select[: self.compiler.col_count]
        self.columns = [alias for _, _, alias in selected]
        # What results_iter() would look up for every row: the backend's
        # and the fields' converters (UUIDs, datetimes), once.
        fields = [column for column, _, _ in selected]
        if self.compiler.has_composite_fields(fields):
            raise ValueError("a read of a composite primary key cannot be compiled")
        self.converters = self.compiler.get_converters(fields)


class CompiledRead:
    """``build(**markers)`` returns a values() queryset; ``first(**values)`` runs it.

    The queryset must select named columns (values()), so each row comes
    back as a dict keyed by those names, converted as Django converts them.
    """

    def __init__(self, build: Callable[..., QuerySet[Any, Any]], *names: str) -> None:
        self._build = build
        self._names = names
        self._per_connection: _PerConnection[_Compiled] = _PerConnection()

    def _compiled(self, using: str) -> _Compiled:
        def compile_() -> _Compiled:
            markers = _markers(self._names)
            return _Compiled(self._build(**markers), markers, using)
        return self._per_connection.get(using, compile_)

    def first(self, using: str = DEFAULT_DB_ALIAS, **values: str) -> dict[str, Any] | None:
        if set(values) != set(self._names):
            raise TypeError(f"expected the parameters {sorted(self._names)}, got {sorted(values)}")
        compiled = self._compiled(using)
        params = [values[name] if name else constant for name, constant in compiled.template]
        with compiled.connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            row = cursor.fetchone()
        if row is None:
            return None
        if compiled.converters:
            row = next(compiled.compiler.apply_converters([row], compiled.converters))
        return dict(zip(compiled.columns, row, strict=True))


class _CompiledUpdate:
    def __init__(self, queryset: QuerySet[Any, Any], changes: dict[str, Any],
                 markers: dict[str, Any], using: str) -> None:
        self.connection = connections[using]
        # What QuerySet.update() builds before it executes.
        query: Any = queryset.query.chain(sql.UpdateQuery)
        query.add_update_values(changes)
        query.annotations = {}
        compiler = query.get_compiler(using=using)
        self.sql, params = compiler.as_sql()
        if query.related_updates or not self.sql:
            raise ValueError("only an UPDATE of one table's own columns can be compiled")
        self.template = _parameter_template(params, markers)


class CompiledUpdate:
    """``build(**markers)`` returns (a queryset, its update() keyword arguments);
    ``run(**values)`` executes that UPDATE and returns how many rows it changed.

    ``strings`` and ``integers`` name the parameters: the values given to
    run() take their places in the SQL the ORM compiled once per thread.
    """

    def __init__(self, build: Callable[..., tuple[QuerySet[Any, Any], dict[str, Any]]], *,
                 strings: tuple[str, ...] = (), integers: tuple[str, ...] = ()) -> None:
        self._build = build
        self._strings = strings
        self._integers = integers
        self._per_connection: _PerConnection[_CompiledUpdate] = _PerConnection()

    def _compiled(self, using: str) -> _CompiledUpdate:
        def compile_() -> _CompiledUpdate:
            markers = _markers(self._strings, self._integers)
            queryset, changes = self._build(**markers)
            return _CompiledUpdate(queryset, changes, markers, using)
        return self._per_connection.get(using, compile_)

    def run(self, using: str = DEFAULT_DB_ALIAS, **values: Any) -> int:
        if set(values) != {*self._strings, *self._integers}:
            raise TypeError(f"expected the parameters {sorted([*self._strings, *self._integers])},"
                            f" got {sorted(values)}")
        for name in self._strings:
            if not isinstance(values[name], str):
                raise TypeError(f"{name} must be a string")
        for name in self._integers:
            if type(values[name]) is not int:
                raise TypeError(f"{name} must be an integer")
        compiled = self._compiled(using)
        params = [kind(values[name]) if name else kind for name, kind in compiled.template]
        # As QuerySet.update(): an error marks the surrounding atomic block for rollback.
        with transaction.mark_for_rollback_on_error(using=using):
            with compiled.connection.cursor() as cursor:
                cursor.execute(compiled.sql, params)
                return int(cursor.rowcount)


class _CompiledInsert:
    def __init__(self, obj: models.Model, fields: list[Any], using: str) -> None:
        self.connection = connections[using]
        query = sql.InsertQuery(type(obj))
        query.insert_values(fields, [obj])
        self.compiler: Any = query.get_compiler(using=using)
        meta = type(obj)._meta
        self.returning_fields = list(meta.db_returning_fields)
        self.compiler.returning_fields = self.returning_fields
        [(self.sql, _)] = self.compiler.as_sql()
        self.converters = self.compiler.get_converters(
            [field.get_col(meta.db_table) for field in self.returning_fields])


class CompiledInsert:
    """``insert(obj)`` runs the INSERT that ``obj.save(force_insert=True)`` runs, compiled once.

    Model.save() builds an InsertQuery and compiles it on every call: half
    of what saving a memory entry cost, the statement itself included
    (docs/performance.md). Here the ORM compiles it once per thread and
    database alias; each call still takes every value from the ORM (each
    field's pre_save() and get_db_prep_save(), through the same compiler)
    and converts the returned primary key as Django does.

    For a model without parents and with a primary key the database
    assigns. Where the ORM's save would do more, it is called instead: a
    model with save signal receivers, or a value that is an expression.
    """

    def __init__(self, model: type[models.Model]) -> None:
        meta = model._meta
        if meta.parents or meta.order_with_respect_to or meta.auto_field is not meta.pk:
            raise ValueError(f"{model.__name__}'s inserts cannot be compiled")
        self._model = model
        # What Model._save_table inserts when the primary key is not set.
        self._fields = [field for field in meta.local_concrete_fields
                        if not field.generated and field is not meta.auto_field]
        self._per_connection: _PerConnection[_CompiledInsert] = _PerConnection()

    def insert(self, obj: models.Model, using: str = DEFAULT_DB_ALIAS) -> None:
        if type(obj) is not self._model:
            raise TypeError(f"expected a {self._model.__name__}, got {type(obj).__name__}")
        meta = self._model._meta
        if (not obj._state.adding or getattr(obj, meta.pk.attname) is not None
                or pre_save.has_listeners(self._model) or post_save.has_listeners(self._model)):
            obj.save(force_insert=True, using=using)
            return
        obj._prepare_related_fields_for_save(operation_name="save")  # type: ignore[attr-defined]
        compiled = self._per_connection.get(
            using, lambda: _CompiledInsert(obj, self._fields, using))
        compiler = compiled.compiler
        values = [field.pre_save(obj, add=True) for field in self._fields]
        if any(hasattr(value, "resolve_expression") for value in values):
            obj.save(force_insert=True, using=using)
            return
        params = [compiler.prepare_value(field, value)
                  for field, value in zip(self._fields, values, strict=True)]
        # As Model.save_base(): an error marks the surrounding atomic block for rollback.
        with transaction.mark_for_rollback_on_error(using=using):
            with compiled.connection.cursor() as cursor:
                cursor.execute(compiled.sql, params)
                returned = cursor.fetchone()
        if compiled.converters:
            returned = next(compiler.apply_converters([returned], compiled.converters))
        for field, value in zip(compiled.returning_fields, returned, strict=True):
            setattr(obj, field.attname, value)
        obj._state.db = using
        obj._state.adding = False
