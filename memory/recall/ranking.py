"""Recall: a project's entries ranked by how well they answer a text (docs/recall.md).

Two rankers, and their blend:

- ``keyword`` (memory.recall.keyword): bm25 on SQLite, bm25's idf with
  ts_rank on PostgreSQL, over any of the query's words, stems matched;
- ``semantic``: the cosine of the query's vector with every entry's
  (memory.recall.vectors), exact, over the process's matrix of the project;
- ``hybrid``, the default: each ranker's best candidates, their scores
  min-max normalised over the candidates, summed with a semantic weight
  that follows the query's shape (semantic_weight): the model represents
  identifiers and names poorly, and the keyword ranking matches them
  exactly. The weights were chosen on the evaluation sets of both kinds at
  once (bench/recall/, docs/recall.md); rank fusion (RRF) and z-scores
  were measured and ranked worse.

The filters are the list's (memory.selectors.entry_filter): the keyword
ranker asks the database for filtered matches, the semantic one masks its
scores with the filtered ids. ``view="current"`` leaves out entries a later
one corrects. When the model cannot load, the answer is the keyword
ranking with a ``degraded`` reason, never an error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from gedweb.embedding import EmbedderUnavailable, Vectors
from memory.models import MemoryEntry, Project, RecallProgress
from memory.recall import documents, keyword, vectors
from memory.recall.indexer import head_seq

MODES = ("hybrid", "semantic", "keyword")
VIEWS = ("current", "all")
MAX_LIMIT = 50
MAX_QUERY_CHARS = 4000
# The weight of the semantic score in the hybrid sum (the keyword score has
# the rest): for a question in words; for one naming someone or something
# (a capitalised word after the first); for a short query holding an
# identifier (an error code, a file name, a ticket id).
SEMANTIC_WEIGHT = 0.8
NAMED_SEMANTIC_WEIGHT = 0.6
IDENTIFIER_SEMANTIC_WEIGHT = 0.5
# An identifier query has at most this many words.
IDENTIFIER_QUERY_WORDS = 6
_IDENTIFIER_MARKS = frozenset("0123456789_./:-#")
# Candidates each ranker brings to the blend, at least.
CANDIDATES = 100
# A compact matrix's shortlist, at least, scored exactly from the stored vectors.
SHORTLIST = 1000


@dataclass
class Hit:
    """An entry, or a section of a document's current revision."""

    entry: MemoryEntry | None
    score: float
    keyword_rank: int | None
    semantic_rank: int | None
    document: documents.SectionHit | None = None
    # The cosine of the text's vector with the hit's, where the answer had
    # both (not in keyword mode, nor for an entry the indexer has not reached):
    # an absolute measure, where ``score`` only orders one answer's hits.
    cosine: float | None = None


@dataclass
class RecallResult:
    hits: list[Hit]
    mode: str
    model: str
    through_seq: int
    head_seq: int
    degraded: str | None = None
    # What each ranker brought, for the evaluation (bench/recall).
    candidates: dict[str, int] = field(default_factory=dict)


def _normalised(scores: dict[Any, float]) -> dict[Any, float]:
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    spread = high - low
    return {key: (value - low) / spread if spread > 0 else 1.0 for key, value in scores.items()}


def _is_identifier(token: str) -> bool:
    """ERR_CONN_RESET, settings.py, HAR-412, E1102, camelCase, HTTP: a token the model splits."""
    if not any(c.isalpha() for c in token):
        return False
    if any(c in _IDENTIFIER_MARKS for c in token.strip(".,:;!?-")):
        return True
    letters = [c for c in token if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return True
    return any(a.islower() and b.isupper() for a, b in zip(token, token[1:]))


def semantic_weight(text: str) -> float:
    """The hybrid blend's semantic weight for this query, from its shape; linear in the text."""
    words = text.split()
    if len(words) <= IDENTIFIER_QUERY_WORDS and any(_is_identifier(w) for w in words):
        return IDENTIFIER_SEMANTIC_WEIGHT
    if any(len(w) >= 3 and w[0].isupper() and w[1:].islower() for w in words[1:]):
        return NAMED_SEMANTIC_WEIGHT
    return SEMANTIC_WEIGHT


def blend(semantic: dict[Any, float], keyword_scores: dict[Any, float],
          weight: float | None = None,
          keyword_more: dict[Any, float] | None = None) -> dict[Any, float]:
    """The hybrid score of every candidate: weighted min-max-normalised scores, 0 where absent.

    ``keyword_more`` is a second keyword list on a scale of its own (the
    documents' bm25), normalised on its own before it joins the first.
    """
    weight = SEMANTIC_WEIGHT if weight is None else weight
    sem = _normalised(semantic)
    kw = {**_normalised(keyword_scores), **_normalised(keyword_more or {})}
    return {key: weight * sem.get(key, 0.0) + (1 - weight) * kw.get(key, 0.0)
            for key in sem.keys() | kw.keys()}


Key = int | tuple[str, str, int]  # an entry's id, or ("document", path, section)


def _corrected_among(entry_ids: list[int]) -> set[int]:
    """Which of these entries a later entry corrects (the partial index on corrects)."""
    found: set[int] = set()
    for start in range(0, len(entry_ids), 1000):
        found.update(MemoryEntry.objects.filter(corrects_id__in=entry_ids[start:start + 1000])
                     .values_list("corrects_id", flat=True))
    return found


def _best_rows(rows: npt.NDArray[np.intp], scores: npt.NDArray[np.float32],
               ids: npt.NDArray[np.int64], top: int) -> npt.NDArray[np.intp]:
    """The ``top`` rows of ``rows`` by score, best first, ties by entry id."""
    if len(rows) > top:
        rows = rows[np.argpartition(-scores[rows], top - 1)[:top]]
    return rows[np.lexsort((ids[rows], -scores[rows]))]


def _semantic(project: Project, query: Vectors, progress: RecallProgress | None,
              allowed: npt.NDArray[np.int64] | None, current: bool, count: int,
              ) -> tuple[list[tuple[int, float]], Callable[[list[int]], dict[int, float]]]:
    """The best ``count`` (id, cosine) pairs, and the cosine of any other entry kept.

    With ``current``, a corrected entry is left out: the best are taken,
    the corrected among them dropped, and more taken while too few remain
    (corrections are few, so once is the rule), instead of listing every
    correction of the project first.
    """
    embedder = vectors.embedder()
    matrix = vectors.project_matrix(project, embedder.model_id, embedder.dimension, progress)
    ids = matrix.ids[: matrix.size]
    scores = matrix.scores(query)
    rows = (np.flatnonzero(np.isin(ids, allowed)) if allowed is not None
            else np.arange(matrix.size))
    if matrix.compact:
        # The estimate shortlists; the stored vectors score the shortlist exactly.
        shortlist = max(SHORTLIST, 10 * count)
        if len(rows) > shortlist:
            rows = rows[np.argpartition(-scores[rows], shortlist - 1)[:shortlist]]
        exact = vectors.exact_scores([int(ids[row]) for row in rows], query)
        scores = scores.copy()
        for row in rows:
            scores[row] = exact.get(int(ids[row]), -1.0)
    wanted = count
    while True:
        chosen = _best_rows(rows, scores, ids, 2 * wanted)
        kept = chosen
        if current and len(chosen):
            corrected = _corrected_among([int(i) for i in ids[chosen]])
            if corrected:
                kept = chosen[~np.isin(ids[chosen], list(corrected))]
        if len(kept) >= count or len(chosen) == len(rows):
            break
        wanted *= 2
    kept = kept[:count]
    semantic_best = [(int(ids[row]), float(scores[row])) for row in kept]

    def cosine(entry_ids: list[int]) -> dict[int, float]:
        # The keyword ranker's candidates, already filtered and current.
        where = np.searchsorted(ids, entry_ids)
        present = [entry_id for entry_id, row in zip(entry_ids, where, strict=True)
                   if row < len(ids) and ids[row] == entry_id]
        if matrix.compact:
            return vectors.exact_scores(present, query)
        return {entry_id: float(scores[np.searchsorted(ids, entry_id)]) for entry_id in present}

    return semantic_best, cosine


def _no_cosines(entry_ids: list[int]) -> dict[int, float]:
    return {}


def _order(scores: dict[Key, float]) -> list[Key]:
    """Best first; ties by entry id, entries before document sections."""
    return sorted(scores, key=lambda key: (-scores[key], isinstance(key, tuple),
                                           key if isinstance(key, int) else 0, str(key)))


def _ranks(scores: dict[Key, float]) -> dict[Key, int]:
    return {key: rank for rank, key in enumerate(_order(scores), 1)}


def recall(*, project: Project, text: str, limit: int = 10, mode: str = "hybrid",
           view: str = "current", category: str | None = None, source: str | None = None,
           since: datetime | None = None, until: datetime | None = None) -> RecallResult:
    """The entries and document sections that best answer ``text``, best first.

    Values are already validated. Documents are ranked beside entries unless
    a category or source is asked for (documents have neither); their
    keyword scores are normalised on their own list, since bm25 here and the
    database's are on different scales, and their cosines share the entries'.
    """
    from memory.selectors import entry_filter

    current = view == "current"
    filtered = entry_filter(project=project, category=category, source=source, since=since,
                            until=until, current=current)
    count = max(CANDIDATES, 5 * limit)
    embedder = vectors.embedder()
    # Read once, before the matrix loads: the answer's through_seq then never
    # claims an entry whose vector this recall did not see (the indexer may
    # commit one while the matrix loads; it is then in it, and not claimed).
    progress = vectors.progress_of(project, embedder.model_id)
    degraded: str | None = None
    query: Vectors | None = None
    semantic_best: list[tuple[int, float]] = []
    cosine: Callable[[list[int]], dict[int, float]] = _no_cosines
    if mode != "keyword":
        try:
            query = embedder.embed([text])[0]
        except EmbedderUnavailable as error:
            degraded = f"recall by meaning is unavailable: {error}"
            mode = "keyword"
    if query is not None:
        filtering = any(value is not None for value in (category, source, since, until))
        allowed = (np.fromiter(filtered.values_list("id", flat=True), np.int64)
                   if filtering else None)
        semantic_best, cosine = _semantic(project, query, progress, allowed, current, count)
    head = head_seq(project)
    keyword_best = (keyword.rank(filtered, project_id=project.pk, text=text, limit=count,
                                 project_size=head)
                    if mode != "semantic" else [])
    sections: dict[tuple[str, str, int], documents.SectionHit] = {}
    section_cosines: dict[Any, float] = {}
    section_keyword: dict[Any, float] = {}
    if category is None and source is None:
        sections, section_cosines, section_keyword = documents.rank(
            project, text, query, embedder.model_id, keyword=mode != "semantic",
            since=since, until=until)

    semantic_all: dict[Key, float] = {**dict(semantic_best), **section_cosines}
    semantic_ranks = _ranks(semantic_all)
    entry_keyword: dict[Key, float] = dict(keyword_best)
    document_keyword: dict[Key, float] = dict(section_keyword)
    keyword_ranks = {**_ranks(entry_keyword), **_ranks(document_keyword)}
    scores: dict[Key, float]
    cosines: dict[Key, float] = {}
    if mode == "semantic":
        scores = cosines = semantic_all
    elif mode == "keyword":
        scores = {**_normalised(entry_keyword), **_normalised(document_keyword)}
    else:
        entry_semantic: dict[int, float] = dict(semantic_best)
        # A keyword candidate the semantic list left out still has a cosine.
        entry_semantic.update(cosine([key for key, _ in keyword_best
                                      if key not in entry_semantic]))
        cosines = {**section_cosines}
        for entry_id, value in entry_semantic.items():
            cosines[entry_id] = value
        scores = blend(cosines, dict(keyword_best),
                       semantic_weight(text), keyword_more=dict(section_keyword))
    order = _order(scores)
    wanted = [key for key in order[: limit * 2 + 10] if isinstance(key, int)]
    # Both rankers' candidates are already the filtered entries; they are
    # read by primary key alone: asked for with the project as well, SQLite
    # (which keeps no statistics) walks the project's index instead, 0.5 s
    # at a million entries.
    rows = {entry.pk: entry for entry in MemoryEntry.objects.filter(pk__in=wanted).with_links()
            if entry.project_id == project.pk}
    hits: list[Hit] = []
    for key in order:
        if len(hits) == limit:
            break
        if isinstance(key, int):
            if key not in rows:
                continue
            hit = Hit(rows[key], round(scores[key], 6), keyword_ranks.get(key),
                      semantic_ranks.get(key), cosine=cosines.get(key))
        else:
            hit = Hit(None, round(scores[key], 6), keyword_ranks.get(key),
                      semantic_ranks.get(key), document=sections[key],
                      cosine=cosines.get(key))
        hits.append(hit)
    return RecallResult(
        hits=hits, mode=mode, model=embedder.model_id,
        through_seq=progress.through_seq if progress is not None else 0,
        head_seq=head, degraded=degraded,
        candidates={"semantic": len(semantic_best), "keyword": len(keyword_best),
                    "sections": len(sections)})
