"""Recall's keyword ranking: any of the query's words, stop words left out, stems matched.

It reads the full-text indexes the list's ``?q=`` already has, so it costs
the append nothing and is never behind the record: SQLite's FTS5 table
(memory 0007, ranked by bm25) and PostgreSQL's GIN index on content_tsv
(memory 0004, ranked by bm25's idf over the matches: _rank_postgresql).
Both index words as written, unstemmed, so a stem is asked for as a
prefix: "deploying" asks for ``deploy*``, which finds deploy, deployed and
deployment. Short stems and numbers are asked for whole. On PostgreSQL the
query is also read by its own parser, whose tokens with punctuation
(``settings.py``, ``3.12``, the ``-412`` of ``HAR-412``) are asked for as
they are.
"""

from __future__ import annotations

import re
from typing import Any

import snowballstemmer
from django.db import connection
from django.db.models import QuerySet

from memory.querysets import fts_project_token

# Snowball's English stop word list (snowballstem.org, english/stop.txt),
# plus the contractions' tails the tokenizer splits off.
STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which
who whom this that these those am is are was were be been being have has had having do
does did doing would should could ought i'm you're he's she's it's we're they're i've
you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll
they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't won't
wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's what's here's
there's when's where's why's how's a an the and but if or because as until while of at by
for with about against between into through during before after above below to from up
down in out on off over under again further then once here there when where why how all
any both each few more most other some such no nor not only own same so than too very
s t d ll m re ve can will just
""".split())

_WORD = re.compile(r"[^\W_]+")
# Terms asked for, at most: a 4,000-character task text is still one bounded query.
MAX_TERMS = 64
# A stem shorter than this is asked for whole: "go*" would match half the index.
_MIN_PREFIX = 3
_stemmer = snowballstemmer.stemmer("english")
# Tokens of PostgreSQL's parser that can be quoted into a tsquery as they are.
_PG_LEXEME = re.compile(r"[\w.\-/@+:]+")


def query_terms(text: str) -> list[tuple[str, bool]]:
    """The query's distinct words as (term, is_prefix), stop words left out, in order.

    Linear in the text: one regex pass with no backtracking, one stem per word.
    """
    terms: dict[str, bool] = {}
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        if word.isdigit() or len(word) < _MIN_PREFIX:
            terms.setdefault(word, False)
            continue
        stem = _stemmer.stemWord(word)
        if len(stem) < _MIN_PREFIX:
            terms.setdefault(word, False)
        else:
            terms[stem] = True
        if len(terms) >= MAX_TERMS:
            break
    return list(terms.items())


def _fts5_match(project_id: str, terms: list[tuple[str, bool]]) -> str:
    alternatives = " OR ".join(f'"{term}"' + ("*" if prefix else "") for term, prefix in terms)
    return f"project : {fts_project_token(project_id)} AND content : ({alternatives})"


def _pg_lexemes(text: str) -> list[str]:
    """PostgreSQL's own tokens of the query (the index's), stop words left out."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT lexeme FROM unnest(to_tsvector('simple'::regconfig, %s))",
                       [text])
        return [lexeme for (lexeme,) in cursor.fetchall()
                if lexeme not in STOP_WORDS and _PG_LEXEME.fullmatch(lexeme)]


def _tsquery_terms(text: str, terms: list[tuple[str, bool]]) -> list[str]:
    """One tsquery per alternative: the stems, then the parser's tokens with punctuation in them.

    A plain word of the parser's is already one of the stems; ``settings.py``,
    ``3.12`` or the ``-412`` of ``HAR-412`` are not, and only they match the
    index's token of the same text.
    """
    alternatives = {f"'{term}'" + (":*" if prefix else ""): None for term, prefix in terms}
    for lexeme in _pg_lexemes(text):
        if len(alternatives) >= MAX_TERMS:
            break
        if not _WORD.fullmatch(lexeme):
            alternatives.setdefault(f"'{lexeme}'", None)
    return list(alternatives)


def _rank_postgresql(entries: QuerySet[Any], text: str, terms: list[tuple[str, bool]],
                     project_size: int, limit: int) -> list[tuple[int, float]]:
    """bm25's idf over PostgreSQL's index: each matched alternative weighs by its rarity.

    ts_rank weighs every word alike, so a question's common word outranked
    the rare identifier beside it. Here one pass over the filtered matches
    counts each alternative's document frequency among them and scores a
    row by the sum of ln(1 + (N - df + 0.5) / (df + 0.5)) over the
    alternatives it holds (N: the project's size), with ts_rank (length
    normalised) added as the term-frequency part and tie-break.
    """
    alternatives = _tsquery_terms(text, terms)
    inner, inner_params = entries.values("id").query.sql_with_params()
    hits = ", ".join(f"e.content_tsv @@ to_tsquery('simple'::regconfig, %s) AS h{i}"
                     for i in range(len(alternatives)))
    counts = ", ".join(f"count(*) FILTER (WHERE h{i}) AS d{i}" for i in range(len(alternatives)))
    weights = " + ".join(
        f"CASE WHEN m.h{i} THEN ln(1 + (%s - d.d{i} + 0.5) / (d.d{i} + 0.5)) ELSE 0 END"
        for i in range(len(alternatives)))
    # Every SQL fragment is built from constants and the index i; each value
    # (the tsqueries, N, the limit) is a query parameter.
    sql = (
        f"WITH m AS (SELECT e.id, e.seq, {hits},"  # nosec B608
        f" ts_rank(e.content_tsv, to_tsquery('simple'::regconfig, %s), 1) AS r"
        f" FROM memory_memoryentry e WHERE e.id IN ({inner})"
        f" AND e.content_tsv @@ to_tsquery('simple'::regconfig, %s)),"
        f" d AS (SELECT {counts} FROM m)"
        f" SELECT m.id, ({weights}) + m.r AS score FROM m, d"
        f" ORDER BY score DESC, m.seq LIMIT %s"
    )
    whole = " | ".join(alternatives)
    params = [*alternatives, whole, *inner_params, whole,
              *[float(max(project_size, 1))] * len(alternatives), limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(int(entry_id), float(score)) for entry_id, score in cursor.fetchall()]


def rank(entries: QuerySet[Any], *, project_id: str, text: str, limit: int,
         project_size: int) -> list[tuple[int, float]]:
    """The ids and scores (higher is better) of the best ``limit`` entries among ``entries``.

    ``entries`` is the project's filtered entries (memory.selectors), which
    the match narrows; empty when the text has no word to look for.
    ``project_size`` (its head seq) is the N of PostgreSQL's idf.
    """
    terms = query_terms(text)
    if not terms:
        return []
    if connection.vendor == "postgresql":
        return _rank_postgresql(entries, text, terms, project_size, limit)
    # bm25 is lower for a better match; the project column weighs nothing.
    ranked = entries.extra(  # nosec B610
        tables=["memory_entry_fts"],
        select={"keyword_score": "-bm25(memory_entry_fts, 1.0, 0.0)"},
        where=["memory_entry_fts.rowid = memory_memoryentry.id",
               "memory_entry_fts MATCH %s"],
        params=[_fts5_match(project_id, terms)],
    ).order_by("-keyword_score", "seq")
    return [(int(entry_id), float(score)) for entry_id, score
            in ranked.values_list("id", "keyword_score")[:limit]]
