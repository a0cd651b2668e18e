"""Reads that the ORM compiles once and then run as SQL with new values.

Building a queryset and compiling it to SQL costs Django about 0.2-0.4 ms
of CPU per query here, several times what SQLite or PostgreSQL then needs
to answer an indexed lookup. On the append path (token lookup, chain head)
that was a quarter of the request. A CompiledRead asks the ORM for the SQL
once per thread and database alias, with a unique marker string standing
in for each parameter, and from then on only executes that SQL with the
request's values. Django still writes the SQL, quotes the names and
converts the results (UUIDs, datetimes, per backend), so nothing about the
query is written by hand.

Only string parameters are supported: they reach the database unchanged,
which is what makes the markers safe to substitute.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import QuerySet


class _Marker(str):
    """A parameter placeholder that cannot be mistaken for a real value."""


class _Compiled:
    def __init__(self, query: QuerySet[Any, dict[str, Any]], markers: dict[str, _Marker],
                 using: str) -> None:
        self.connection = connections[using]
        self.compiler = query.query.get_compiler(using=using)
        self.sql, params = self.compiler.as_sql()
        by_marker: dict[str, str] = {marker: name for name, marker in markers.items()}
        # Each parameter is either a named value given per call or a constant
        # the ORM put there itself; None and markers never collide.
        self.template = [
            (by_marker[p], None) if isinstance(p, str) and p in by_marker else (None, p)
            for p in params
        ]
        missing = set(markers) - {name for name, _ in self.template if name}
        if missing:
            raise ValueError(f"the query does not use the parameters {sorted(missing)}")
        self.columns = [alias for _, _, alias in self.compiler.select[: self.compiler.col_count]]


class CompiledRead:
    """``build(**markers)`` returns a values() queryset; ``first(**values)`` runs it.

    The queryset must select named columns (values()), so each row comes
    back as a dict keyed by those names, converted as Django converts them.
    """

    def __init__(self, build: Callable[..., QuerySet[Any, Any]], *names: str) -> None:
        self._build = build
        self._names = names
        self._local = threading.local()

    def _compiled(self, using: str) -> _Compiled:
        cache: dict[str, _Compiled] = self._local.__dict__.setdefault("by_alias", {})
        compiled = cache.get(using)
        # Django gives each thread its own connection objects; a compiler
        # belongs to one of them.
        if compiled is None or compiled.connection is not connections[using]:
            markers = {name: _Marker(f"\x00gedweb-compiled:{name}\x00") for name in self._names}
            compiled = cache[using] = _Compiled(self._build(**markers), markers, using)
        return compiled

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
        converted = next(iter(compiled.compiler.results_iter(results=[[row]])))
        return dict(zip(compiled.columns, converted, strict=True))
