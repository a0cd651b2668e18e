"""The one keyset paginator: a page of rows past a cursor, never OFFSET or COUNT.

The API, the team pages and the commands all page through ``keyset_slice``;
the API answers with its ``next_cursor`` and the pages build their two-way
``Page`` on it (gedweb.web.keyset_page).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet


def key_of(row: Any, key: str) -> Any:
    """A row's cursor value: an attribute of a model row, or a key of a ``values()`` row."""
    return row[key] if isinstance(row, dict) else getattr(row, key)


@dataclass(frozen=True)
class KeysetSlice:
    """Up to ``limit`` rows in the order read, and whether another row follows them."""

    items: list[Any]
    more: bool
    key: str

    @property
    def next_cursor(self) -> Any:
        """The key of the last row when another row follows it (the API's cursor), else None."""
        return key_of(self.items[-1], self.key) if self.more else None


def keyset_slice(rows: QuerySet[Any, Any], *, key: str, limit: int, after: Any = None,
                 before: Any = None, descending: bool = False,
                 order: str | None = None) -> KeysetSlice:
    """The first ``limit`` rows with ``after < key < before``, ascending unless ``descending``.

    One query reads ``limit + 1`` rows: the extra one only tells that more
    exist. ``key`` must be an indexed column unique within ``rows``; ``order``
    names another column that sorts the rows exactly as ``key`` does
    (memory.querysets.seq_order_key).
    """
    if limit == 0:  # an empty page, as asked: no query, and no cursor to follow
        return KeysetSlice(items=[], more=False, key=key)
    if after is not None:
        rows = rows.filter(**{f"{key}__gt": after})
    if before is not None:
        rows = rows.filter(**{f"{key}__lt": before})
    column = order or key
    chunk = list(rows.order_by(f"-{column}" if descending else column)[: limit + 1])
    return KeysetSlice(items=chunk[:limit], more=len(chunk) > limit, key=key)
