"""What memory shows an operator at GET /metrics (gedweb/metrics.py serves it).

- ``APPENDS``, the entries appended: counted by the one append
  (memory.services._append_locked) once its transaction commits, so a
  rolled-back append or a replayed Idempotency-Key never counts. It has no
  labels: a project label would add a series per project to every worker's
  file and to every scrape, without bound, and a project's own count is
  its head seq in the database already.
- ``MemoryStateCollector``, read when scraped: how far the mirrors lag
  behind the record, how long entries have waited for a signed checkpoint,
  how full the quotas are. Each is one figure over all projects (the worst
  one, or a count of projects), never a series per project, so a scrape's
  size does not grow with the installation; its cost does, a little: one
  query for every project's head and newest checkpoint, a 4 KiB read of the
  end of each project's mirror and one query for the entries those ends
  name (per 100 projects), one query of the quota rows.

The figures are for watching, not evidence: the checkpoints counted here
are not re-authenticated (``memory verify`` and ``doctor`` do that).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.db.models import OuterRef, Subquery
from django.utils import timezone
from prometheus_client import Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from memory import mirror, quotas
from memory.models import ChainCheckpoint, MemoryEntry, Project, ProjectQuota
from memory.recall import indexer, vectors

logger = logging.getLogger("memory.metrics")

# Registered with no registry of its own: gedweb.metrics builds the one a
# scrape reads (in multiprocess mode, from every worker's files instead).
APPENDS = Counter(
    "gedweb_memory_appends", "Memory entries appended (committed), imports included",
    registry=None,
)

# A quota this full is worth a look before writes are refused.
NEAR_LIMIT = 0.8


@dataclass
class MemoryState:
    """The figures of one scrape, each over every project."""

    projects: int = 0
    mirror_lag_entries: int = 0
    mirrors_behind: int = 0
    checkpoint_uncovered_entries: int = 0
    checkpoint_age_seconds: float = 0.0
    quota_use_ratio: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(quotas.KINDS, 0.0))
    quotas_near_limit: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(quotas.KINDS, 0))
    recall_backlog_entries: int = 0
    recall_lag_seconds: float = 0.0


def _heads() -> Iterator[tuple[str, datetime, int | None, int | None, datetime | None]]:
    """Per project: id, created_at, head seq, newest checkpoint's seq and time; one query.

    Each subquery is one probe of a (project, seq) unique index.
    """
    newest_entry = MemoryEntry.objects.filter(project=OuterRef("pk")).order_by("-seq")
    newest_checkpoint = ChainCheckpoint.objects.filter(project=OuterRef("pk")).order_by("-seq")
    rows = Project.objects.order_by("pk").annotate(
        head_seq=Subquery(newest_entry.values("seq")[:1]),
        checkpoint_seq=Subquery(newest_checkpoint.values("seq")[:1]),
        checkpoint_at=Subquery(newest_checkpoint.values("created_at")[:1]),
    ).values_list("pk", "created_at", "head_seq", "checkpoint_seq", "checkpoint_at")
    yield from rows.iterator()


def _mirrored(project_ids: list[str]) -> dict[str, int]:
    """The seq each project's mirror provably holds; 0 when it holds nothing to be trusted."""
    try:
        seqs = mirror.mirrored_seqs(project_ids)
        # A second look where the first met a block being written.
        seqs.update(mirror.mirrored_seqs([pid for pid, seq in seqs.items() if seq is None]))
    except OSError:
        # A file that cannot be read: ask project by project, so it alone counts as unmirrored.
        seqs = {}
        for project_id in project_ids:
            try:
                seqs.update(mirror.mirrored_seqs([project_id]))
            except OSError:
                seqs[project_id] = None
    return {project_id: seq or 0 for project_id, seq in seqs.items()}


def memory_state() -> MemoryState:
    """Read every project's lag, checkpoint and quota figures now."""
    state = MemoryState()
    now = timezone.now()
    heads: dict[str, int] = {}
    for project_id, created_at, head_seq, checkpoint_seq, checkpoint_at in _heads():
        state.projects += 1
        if not head_seq:
            continue
        heads[project_id] = head_seq
        uncovered = head_seq - (checkpoint_seq or 0)
        if uncovered > 0:
            state.checkpoint_uncovered_entries = max(state.checkpoint_uncovered_entries,
                                                     uncovered)
            # Since the newest checkpoint, or since the project began: not the
            # entries' own times, which an import carries over from the past.
            waited = (now - (checkpoint_at or created_at)).total_seconds()
            state.checkpoint_age_seconds = max(state.checkpoint_age_seconds, waited)
    for project_id, mirrored in _mirrored(list(heads)).items():
        lag = max(heads[project_id] - mirrored, 0)
        state.mirror_lag_entries = max(state.mirror_lag_entries, lag)
        state.mirrors_behind += lag > 0
    # Recall's index (memory.recall): what the indexer has not reached yet, and
    # for how long. An entry's created_at is the append's time here: imports
    # are indexed like appends, so an import's old times would only show as
    # a lag while the indexer works through it.
    if settings.RECALL_MODEL != "off":
        entries, oldest = indexer.backlog(vectors.embedder().model_id)
        state.recall_backlog_entries = entries
        if oldest is not None:
            state.recall_lag_seconds = max((now - oldest).total_seconds(), 0.0)
    for quota in ProjectQuota.objects.only("kind", "used_bytes", "limit_mib").iterator():
        ratio = quota.used_bytes / quotas.limit_bytes(quota)
        state.quota_use_ratio[quota.kind] = max(state.quota_use_ratio[quota.kind], ratio)
        state.quotas_near_limit[quota.kind] += ratio >= NEAR_LIMIT
    return state


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


class MemoryStateCollector(Collector):
    """The gauges of memory_state(), computed when /metrics is scraped.

    A database that cannot be read leaves them out and sets
    gedweb_memory_state_ok to 0 (logged), so the request figures are still
    served when they matter most.
    """

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            state = memory_state()
        except (DatabaseError, OSError):
            logger.exception("the memory figures of /metrics could not be read")
            yield _gauge("gedweb_memory_state_ok", "1 when the memory figures below were read",
                         0)
            return
        yield _gauge("gedweb_memory_state_ok", "1 when the memory figures below were read", 1)
        yield _gauge("gedweb_memory_state_seconds", "Time this scrape took to read them",
                     time.perf_counter() - started)
        yield _gauge("gedweb_projects", "Projects", state.projects)
        yield _gauge("gedweb_mirror_lag_entries",
                     "Entries the most lagging MEMORY.md lacks behind the database",
                     state.mirror_lag_entries)
        yield _gauge("gedweb_mirror_projects_behind", "Projects whose MEMORY.md lacks entries",
                     state.mirrors_behind)
        yield _gauge("gedweb_checkpoint_uncovered_entries",
                     "Most entries of one project after its newest signed checkpoint",
                     state.checkpoint_uncovered_entries)
        yield _gauge("gedweb_checkpoint_age_seconds",
                     "Longest time since a project with entries after its newest checkpoint "
                     "took that checkpoint (or began, without one)",
                     state.checkpoint_age_seconds)
        yield _gauge("gedweb_recall_backlog_entries",
                     "Entries the recall indexer has not given a vector yet",
                     state.recall_backlog_entries)
        yield _gauge("gedweb_recall_lag_seconds",
                     "Time since the oldest entry the recall indexer has not reached was "
                     "appended (0 when it is caught up)",
                     state.recall_lag_seconds)
        use = GaugeMetricFamily("gedweb_quota_use_ratio",
                                "Highest share of a quota used by one project", labels=["kind"])
        near = GaugeMetricFamily("gedweb_quota_projects_near_limit",
                                 f"Projects using {NEAR_LIMIT:.0%} or more of a quota",
                                 labels=["kind"])
        for kind in quotas.KINDS:
            use.add_metric([kind], state.quota_use_ratio[kind])
            near.add_metric([kind], state.quotas_near_limit[kind])
        yield use
        yield near
