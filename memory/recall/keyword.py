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

import bisect
import itertools
import re
import threading
import time
from dataclasses import dataclass
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


# Projects of up to this many entries are ranked exactly on PostgreSQL:
# every match scored, each alternative's matches counted.
EXACT_RANK_ENTRIES = 20_000
# Past it, an alternative the planner expects in at most this many of the
# project's entries is rare: every entry holding one is scored...
RARE_MATCHES = 2_000
# ...and of the entries holding only common ones, those among the project's
# newest RECENT_WINDOW (by seq).
RECENT_WINDOW = 20_000

_TSQUERY = "to_tsquery('simple'::regconfig, %s)"


def _idf(matches: str) -> str:
    """bm25's idf as SQL: N a parameter, ``matches`` an SQL expression of the frequency."""
    return f"ln(1 + (%s - {matches} + 0.5) / ({matches} + 0.5))"


def _matching(entries: QuerySet[Any], tsquery: str) -> QuerySet[Any]:
    """The filtered entries holding any alternative of ``tsquery``, unordered (no sort to pay)."""
    return entries.order_by().extra(  # nosec B610: a constant fragment, the tsquery a parameter
        where=[f"memory_memoryentry.content_tsv @@ {_TSQUERY}"], params=[tsquery])


def _rank_exactly(entries: QuerySet[Any], alternatives: list[str], project_size: int,
                  limit: int) -> list[tuple[int, float]]:
    """Every match scored; each alternative's frequency counted among the matches."""
    whole = " | ".join(alternatives)
    inner, inner_params = _matching(entries, whole).values("id", "seq").query.sql_with_params()
    hits = ", ".join(f"e.content_tsv @@ {_TSQUERY} AS h{i}" for i in range(len(alternatives)))
    counts = ", ".join(f"count(*) FILTER (WHERE h{i}) AS d{i}" for i in range(len(alternatives)))
    weights = " + ".join(f"CASE WHEN m.h{i} THEN {_idf(f'd.d{i}')} ELSE 0 END"
                         for i in range(len(alternatives)))
    # Every SQL fragment is built from constants and the index i; each value
    # (the tsqueries, N, the limit) is a query parameter.
    sql = (
        f"WITH m AS (SELECT e.id, e.seq, {hits},"  # nosec B608
        f" ts_rank(e.content_tsv, {_TSQUERY}, 1) AS r"
        f" FROM memory_memoryentry e JOIN ({inner}) f ON f.id = e.id),"
        f" d AS (SELECT {counts} FROM m)"
        f" SELECT m.id, ({weights}) + m.r AS score FROM m, d"
        f" ORDER BY score DESC, m.seq LIMIT %s"
    )
    params = [*alternatives, whole, *inner_params,
              *[float(max(project_size, 1))] * len(alternatives), limit]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(int(entry_id), float(score)) for entry_id, score in cursor.fetchall()]


@dataclass(frozen=True)
class _LexemeStatistics:
    """content_tsv's most common lexemes and the share of entries holding each (pg_stats)."""

    lexemes: list[str]  # sorted
    cumulative: list[float]  # cumulative[i]: the shares of lexemes[:i], summed
    least: float  # the least share in the list: a lexeme not in it is rarer

    def share(self, alternative: str) -> float:
        """The share of entries expected to hold a tsquery alternative (``'term'`` or ``'stem':*``).

        A stem's share sums its words' (an upper bound: an entry may hold
        two of them); a word or a phrase not among the most common is rarer
        than the least common one, and is taken at half its share, as
        PostgreSQL's own estimate takes it.
        """
        prefix = alternative.endswith(":*")
        term = alternative[1:-3] if prefix else alternative[1:-1]
        low = bisect.bisect_left(self.lexemes, term)
        if prefix:
            high = bisect.bisect_left(self.lexemes, term + "\U0010ffff", low)
        else:
            high = low + 1 if low < len(self.lexemes) and self.lexemes[low] == term else low
        if high == low:
            return self.least / 2
        return min(1.0, self.cumulative[high] - self.cumulative[low])


_statistics: dict[str, _LexemeStatistics | None] = {}
_statistics_read: dict[str, float] = {}
_statistics_lock = threading.Lock()
# How long a process trusts the statistics it read (ANALYZE moves them slowly).
STATISTICS_SECONDS = 60.0


def forget_statistics() -> None:
    """Drop this process's copy of the lexeme statistics (tests; after an ANALYZE)."""
    with _statistics_lock:
        _statistics.clear()
        _statistics_read.clear()


def _lexeme_statistics() -> _LexemeStatistics | None:
    """The planner's statistics of content_tsv (memory 0015 samples them at target 1000).

    None before the table was ever analysed. Read from pg_stats at most once
    a minute per process: about 8,000 lexemes at 100,000 entries.
    """
    now = time.monotonic()
    alias = connection.alias
    with _statistics_lock:
        if now - _statistics_read.get(alias, -STATISTICS_SECONDS) < STATISTICS_SECONDS:
            return _statistics[alias]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
            " WHERE schemaname = current_schema() AND tablename = 'memory_memoryentry'"
            " AND attname = 'content_tsv'")
        row = cursor.fetchone()
    statistics = None
    if row is not None and row[0]:
        # The shares of the lexemes, then the least and the greatest of them.
        lexemes, shares = row[0], row[1]
        pairs = sorted(zip(lexemes, shares[: len(lexemes)], strict=True))
        statistics = _LexemeStatistics(
            lexemes=[lexeme for lexeme, _ in pairs],
            cumulative=[0.0, *itertools.accumulate(share for _, share in pairs)],
            least=float(shares[len(lexemes)]))
    with _statistics_lock:
        _statistics[alias], _statistics_read[alias] = statistics, now
    return statistics


def _rank_estimated(entries: QuerySet[Any], alternatives: list[str], project_size: int,
                    limit: int) -> list[tuple[int, float]]:
    """A large project's best matches, without reading every match of its common words.

    Each alternative's frequency is estimated from the planner's statistics
    (_LexemeStatistics, scaled to the project). An alternative expected in
    at most RARE_MATCHES entries is rare: every entry holding one is a
    candidate (found through the GIN index); of the entries holding only
    common ones, those among the newest RECENT_WINDOW are. Every candidate
    is scored alike, whichever way it came in. At 100,000 entries a
    question of common words scored most of the project (227 ms at p50);
    this reads a bounded part of it.
    """
    statistics = _lexeme_statistics()
    if statistics is None:  # never analysed: autovacuum will; until then, every match
        return _rank_exactly(entries, alternatives, project_size, limit)
    frequencies = [statistics.share(a) * project_size for a in alternatives]
    rare = [a for a, df in zip(alternatives, frequencies) if df <= RARE_MATCHES]
    common = [a for a, df in zip(alternatives, frequencies) if df > RARE_MATCHES]
    # The score in each part's own scan: no second pass over the candidates.
    score = " + ".join(f"CASE WHEN memory_memoryentry.content_tsv @@ {_TSQUERY}"
                       f" THEN {_idf('%s')} ELSE 0 END" for _ in alternatives)
    score = f"({score}) + ts_rank(memory_memoryentry.content_tsv, {_TSQUERY}, 1)"
    score_params: list[Any] = []
    for alternative, df in zip(alternatives, frequencies):
        score_params += [alternative, float(project_size), df, df]
    score_params.append(" | ".join(alternatives))
    parts: list[QuerySet[Any]] = []
    if rare:
        parts.append(_matching(entries, " | ".join(rare)))
    if common:
        parts.append(_matching(entries, " | ".join(common)).filter(
            seq__gt=project_size - RECENT_WINDOW))
    sqls: list[str] = []
    params: list[Any] = []
    for part in parts:
        sql, part_params = part.extra(  # nosec B610: constant fragments, values as parameters
            select={"keyword_score": score}, select_params=score_params,
        ).values_list("id", "seq", "keyword_score").query.sql_with_params()
        sqls.append(f"({sql})")
        params += part_params
    # An entry in both parts has the same score in each: UNION keeps it once.
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, keyword_score FROM ({' UNION '.join(sqls)}) c"  # nosec B608
                       " ORDER BY keyword_score DESC, seq LIMIT %s", [*params, limit])
        return [(int(entry_id), float(value)) for entry_id, value in cursor.fetchall()]


def _rank_postgresql(entries: QuerySet[Any], text: str, terms: list[tuple[str, bool]],
                     project_size: int, limit: int) -> list[tuple[int, float]]:
    """bm25's idf over PostgreSQL's index: each matched alternative weighs by its rarity.

    ts_rank weighs every word alike, so a question's common word outranked
    the rare identifier beside it. Here a row scores the sum of
    ln(1 + (N - df + 0.5) / (df + 0.5)) over the alternatives it holds (N:
    the project's size, df: how many of its entries hold the alternative),
    with ts_rank (length normalised) added as the term-frequency part and
    tie-break. A project of up to EXACT_RANK_ENTRIES is ranked exactly; a
    larger one from the planner's estimates (_rank_estimated).
    """
    alternatives = _tsquery_terms(text, terms)
    if project_size <= EXACT_RANK_ENTRIES:
        return _rank_exactly(entries, alternatives, project_size, limit)
    return _rank_estimated(entries, alternatives, project_size, limit)


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
