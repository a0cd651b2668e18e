"""Per-project storage quotas: the one rule, read top to bottom.

Four quotas per project, in bytes of stored text (UTF-8) plus a fixed cost
per stored row:

- ``entries``: memory entry content and memory candidate content;
- ``documents``: document revisions and standards imports;
- ``work_files``: work files, task artifacts and evidence records (their JSON);
- ``skills``: skill versions.

Every service that stores a row of these kinds calls quota_charge() inside
its own transaction, after the locks it already takes (the project or work
item row), so the quota row is always the last lock and the lock order of
the services stays as it was. The charge is one conditional UPDATE: two
writers near the limit cannot both pass, on PostgreSQL (the row lock of the
UPDATE, re-checked after the wait) as on SQLite (one writer at a time). A
refused write raises QuotaExceeded (409 ``quota_exceeded``) and its whole
transaction rolls back, so nothing of it is stored.

Imports (``ged_import``, ``ferryman_import``) wrap their
writes in deferred(): the charges add up and are taken at the end, once per
kind, in kind order, still inside the import's transaction. So an import
holds quota rows only after all its work item locks, in the same order as
single writes, and two imports or an import and a write cannot deadlock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import BigIntegerField, F, QuerySet, Value
from django.db.models.functions import Cast, Coalesce

from gedweb.db.compiled import CompiledUpdate
from gedweb.errors import QuotaExceeded
from memory.models import Project, ProjectQuota

__all__ = [
    "KINDS",
    "MIB",
    "ROW_OVERHEAD_BYTES",
    "deferred",
    "default_limit_mib",
    "quota_charge",
    "quota_rows_create",
    "human_bytes",
    "limit_bytes",
    "text_bytes",
]

KINDS: tuple[str, ...] = tuple(ProjectQuota.Kind.values)
MIB = 1024 * 1024

# Charged for every stored row on top of its text. A row costs storage
# beyond its text (ids, hashes, author, times, indexes: a few hundred bytes
# on either database), and without this a million 1-byte entries would cost
# a megabyte and the number of rows would be bounded by nothing.
ROW_OVERHEAD_BYTES = 256


def text_bytes(*texts: str | None) -> int:
    """The stored size of some text: its UTF-8 bytes (what the backfill's SQL counts)."""
    return sum(len(text.encode("utf-8")) for text in texts if text)


def default_limit_mib(kind: str) -> int:
    """The installation's limit for a kind (settings.QUOTAS_MIB, from GEDWEB_QUOTA_*_MIB)."""
    return int(settings.QUOTAS_MIB[kind])


def _human(size: int) -> str:
    return f"{size / MIB:,.2f} MiB"


def _limit_text(limit_bytes: int) -> str:
    mib = limit_bytes / MIB
    return f"{mib:,.0f} MiB" if mib == int(mib) else f"{mib:,.1f} MiB"


# --- charging ----------------------------------------------------------------------------

# The charges of an import in progress (deferred()), by project id and kind.
_pending: ContextVar[dict[tuple[str, str], int] | None] = ContextVar("quota_pending",
                                                                    default=None)


def quota_charge(*, project: Project | str, kind: str, size_bytes: int, rows: int = 1) -> None:
    """Count ``size_bytes`` of text in ``rows`` new rows against the project's ``kind`` quota.

    Call it inside the transaction that stores the rows, after its other
    locks. Raises QuotaExceeded, naming the quota, when the project would go
    past its limit; the caller's transaction then stores nothing.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown quota {kind!r}")
    project_id = project.pk if isinstance(project, Project) else project
    cost = size_bytes + rows * ROW_OVERHEAD_BYTES
    if cost <= 0:
        return
    pending = _pending.get()
    if pending is not None:
        pending[(project_id, kind)] = pending.get((project_id, kind), 0) + cost
        return
    _charge(project_id, kind, cost)


@contextmanager
def deferred() -> Iterator[None]:
    """Add up the charges of the writes inside, and take them when the block ends.

    Use it inside the writer's transaction (an import), so a refusal at the
    end still rolls everything back. Nested uses join the outermost.
    """
    if _pending.get() is not None:
        yield
        return
    pending: dict[tuple[str, str], int] = {}
    token = _pending.set(pending)
    try:
        yield
    finally:
        _pending.reset(token)
    # Only reached without an exception: a failed import charges nothing.
    for (project_id, kind), cost in sorted(pending.items()):
        try:
            _charge(project_id, kind, cost)
        except QuotaExceeded as exc:
            raise QuotaExceeded(f"{exc.message}; nothing of this import was stored",
                                **exc.extra) from None


def _limit_expression(kind: str) -> Coalesce:
    # In SQL, so an operator's change in the admin applies to the very next
    # write; limit_mib is cast first: an int4 times 1 MiB overflows above 2 GiB.
    return Coalesce(
        Cast("limit_mib", BigIntegerField()) * Value(MIB, output_field=BigIntegerField()),
        Value(default_limit_mib(kind) * MIB, output_field=BigIntegerField()),
        output_field=BigIntegerField(),
    )


def _conditional_charge(kind: str) -> CompiledUpdate:
    """The UPDATE that decides and counts one charge of ``kind``.

    One statement: "used + cost <= limit" is checked on the row as the
    UPDATE finds it, after any concurrent writer's commit (PostgreSQL
    re-reads a row it waited for), never on a read made earlier. Compiled
    once per thread (gedweb/db/compiled.py): building it through the ORM on
    every append cost about a fifth of the append's CPU.
    """

    def build(project_id: str, cost: int) -> tuple[QuerySet[ProjectQuota], dict[str, Any]]:
        amount = Value(cost, output_field=BigIntegerField())
        rows = ProjectQuota.objects.filter(project_id=project_id, kind=kind,
                                           used_bytes__lte=_limit_expression(kind) - amount)
        return rows, {"used_bytes": F("used_bytes") + amount}

    return CompiledUpdate(build, strings=("project_id",), integers=("cost",))


# Per kind, and per installation default: the default limit is a constant of the SQL.
_CHARGES: dict[tuple[str, int], CompiledUpdate] = {}


def _charge(project_id: str, kind: str, cost: int) -> None:
    key = (kind, default_limit_mib(kind))
    charge = _CHARGES.get(key)
    if charge is None:
        charge = _CHARGES.setdefault(key, _conditional_charge(kind))
    for _ in range(3):
        if charge.run(project_id=project_id, cost=cost):
            return
        quota = ProjectQuota.objects.filter(project_id=project_id, kind=kind).first()
        if quota is not None:
            limit = limit_bytes(quota)
            if quota.used_bytes + cost <= limit:
                # The row was created and committed by a concurrent first
                # write after the UPDATE took its snapshot (PostgreSQL, READ
                # COMMITTED): it fits, so charge it again rather than refuse.
                continue
            raise QuotaExceeded(
                # Exact bytes too: one byte over would round to the limit itself.
                f"project {project_id} would use {quota.used_bytes + cost:,} bytes "
                f"({_human(quota.used_bytes + cost)}) of its {_limit_text(limit)} {kind} quota "
                f"({limit:,} bytes); an operator can raise it in the admin",
                quota=kind,
                limit_bytes=limit,
                used_bytes=quota.used_bytes,
            )
        # The first write of this kind: create the row, then charge it. A
        # savepoint, so losing a concurrent create only costs a retry.
        try:
            with transaction.atomic():
                ProjectQuota.objects.create(project_id=project_id, kind=kind, used_bytes=0)
        except IntegrityError:
            pass
    raise RuntimeError(f"quota row {project_id}/{kind} could not be created")  # unreachable


def quota_rows_create(project: Project) -> None:
    """A new project's four quota rows, at 0 and the default limit, for the admin to show."""
    ProjectQuota.objects.bulk_create(
        [ProjectQuota(project=project, kind=kind) for kind in KINDS], ignore_conflicts=True
    )


# --- reading -------------------------------------------------------------------------------


def limit_bytes(quota: ProjectQuota) -> int:
    """The limit a quota row stands for: its override, else the installation's default."""
    return (quota.limit_mib or default_limit_mib(quota.kind)) * MIB


def human_bytes(size: int) -> str:
    """Bytes as a person reads them: 812 bytes, 3.4 KiB, 256.0 MiB."""
    if size < 1024:
        return f"{size:,} bytes"
    if size < MIB:
        return f"{size / 1024:,.1f} KiB"
    if size < 1024 * MIB:
        return f"{size / MIB:,.1f} MiB"
    return f"{size / (1024 * MIB):,.2f} GiB"
