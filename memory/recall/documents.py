"""Recall of documents: the sections of current revisions, ranked beside entries.

PROJECT.md, CONTEXT.md, ADRs, reports and handoffs are cut at their
headings (gedweb.lib.sections). The semantic score of a section is the
cosine with its stored vector (DocumentVector, made by the indexer); the
keyword score is bm25 over the sections of the project's current
revisions, computed here with the keyword ranking's own terms (stems as
prefixes, stop words left out), since documents have no full-text index.
A project's newest MAX_DOCUMENTS current revisions are ranked.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from gedweb.embedding import Vectors
from gedweb.lib.sections import markdown_sections
from memory.models import DocumentRevision, DocumentVector, Project
from memory.recall.keyword import query_terms
from memory.recall.vectors import dequantise

MAX_DOCUMENTS = 500
# A section's text in an answer, at most.
SHOWN_CHARS = 2_000
_BM25_K1, _BM25_B = 1.2, 0.75
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class SectionHit:
    revision: DocumentRevision
    section: int
    heading: str
    start: int
    end: int

    @property
    def key(self) -> tuple[str, str, int]:
        return ("document", self.revision.path, self.section)

    @property
    def text(self) -> str:
        return self.revision.content[self.start:self.end].strip()[:SHOWN_CHARS]


def _current(project: Project, since: datetime | None,
             until: datetime | None) -> list[DocumentRevision]:
    revisions = DocumentRevision.objects.for_project(project).current()
    if since is not None:
        revisions = revisions.filter(created_at__gte=since)
    if until is not None:
        revisions = revisions.filter(created_at__lt=until)
    return list(revisions.order_by("-created_at", "path")[:MAX_DOCUMENTS])


def _bm25(sections: list[tuple[SectionHit, list[str]]],
          terms: list[tuple[str, bool]]) -> dict[tuple[str, str, int], float]:
    """bm25 of each section holding a term: a prefix term matches every word it begins."""
    if not sections or not terms:
        return {}
    lengths = [len(words) for _, words in sections]
    average = sum(lengths) / len(lengths) or 1.0
    counts = []
    for _, words in sections:
        per_term = []
        for term, prefix in terms:
            per_term.append(sum(1 for word in words
                                if (word.startswith(term) if prefix else word == term)))
        counts.append(per_term)
    total = len(sections)
    frequencies = [sum(1 for row in counts if row[i]) for i in range(len(terms))]
    scores: dict[tuple[str, str, int], float] = {}
    for (hit, words), row in zip(sections, counts):
        score = 0.0
        for i, tf in enumerate(row):
            if not tf:
                continue
            idf = math.log(1 + (total - frequencies[i] + 0.5) / (frequencies[i] + 0.5))
            norm = tf + _BM25_K1 * (1 - _BM25_B + _BM25_B * len(words) / average)
            score += idf * tf * (_BM25_K1 + 1) / norm
        if score > 0:
            scores[hit.key] = score
    return scores


def rank(project: Project, text: str, query: Vectors | None, model: str, *,
         keyword: bool, since: datetime | None = None, until: datetime | None = None,
         ) -> tuple[dict[tuple[str, str, int], SectionHit],
                    dict[tuple[str, str, int], float], dict[tuple[str, str, int], float]]:
    """Every current section's hit, its cosine with ``query`` (if given), its bm25 (if asked)."""
    revisions = _current(project, since, until)
    hits: dict[tuple[str, str, int], SectionHit] = {}
    for revision in revisions:
        for index, part in enumerate(markdown_sections(revision.content)):
            hit = SectionHit(revision, index, part.heading, part.start, part.end)
            hits[hit.key] = hit
    cosines: dict[tuple[str, str, int], float] = {}
    if query is not None and revisions:
        stored = DocumentVector.objects.filter(
            revision__in=[r.pk for r in revisions], model=model,
        ).values_list("path", "section", "vector", "scale")
        for path, section, vector, scale in stored:
            key = ("document", path, section)
            if key in hits:
                cosines[key] = float(dequantise(bytes(vector), scale) @ query)
    scores: dict[tuple[str, str, int], float] = {}
    if keyword:
        terms = query_terms(text)
        tokenised = [(hit, [w.lower() for w in _WORD.findall(hit.revision.content[
            hit.start:hit.end])]) for hit in hits.values()]
        scores = _bm25(tokenised, terms)
    return hits, cosines, scores


