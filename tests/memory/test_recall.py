"""Recall (memory.recall, docs/recall.md): GET and POST /v1/projects/{id}/recall.

Through the API on the test database, with the suite's deterministic
embedder (tests/django_fixtures.py, recall_model): the keyword ranking's
words, stems and stop words; the semantic and hybrid rankings once the
indexer followed the record; the filters and the views; every bad request
refused with nothing changed; a model that cannot load answering degraded.
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memory import services
from memory.models import EntryVector, MemoryEntry, RecallCursor, RecallProgress
from memory.recall import indexer, ranking, vectors
from tests.django_fixtures import bearer_client, stored_models

NOTES = [
    ("decision", "agent", "Deployment failed because the database migrations ran too late."),
    ("convention", "agent", "Celery workers run with the solo pool on Windows machines."),
    ("bug", "maria", "ERR_CONN_RESET in the upload client: nginx client_max_body_size was 1m."),
    ("decision", "operator", "Orders stay on PostgreSQL 16; the reporting replica lags."),
    ("gotcha", "agent", "The staging box needs the VPN before any ssh session works."),
]


def _append(project: Any, category: str, content: str, source: str = "agent",
            corrects: int | None = None) -> MemoryEntry:
    return services.memory_entry_create(project=project, author="agent", category=category,
                                        content=content, source=source,
                                        corrects=corrects).entry


@pytest.fixture
def notes(alpha: Any) -> dict[str, Any]:
    entries = [_append(alpha.project, category, content, source)
               for category, source, content in NOTES]
    return {"project": alpha.project, "token": alpha.token, "entries": entries}


def _follow() -> indexer.BatchResult:
    """Run the follower until it has nothing left (what `memory index --follow` does)."""
    total = indexer.BatchResult()
    while True:
        result = indexer.follow_once(vectors.embedder())
        if not result.seen:
            return total
        total.seen += result.seen
        total.indexed += result.indexed


def _recall(token: str, project_id: str = "alpha", **params: Any) -> Any:
    return bearer_client(token).get(f"/v1/projects/{project_id}/recall", params)


def _seqs(body: dict[str, Any]) -> list[int]:
    return [item["seq"] for item in body["items"]]


# --- keyword mode -------------------------------------------------------------------


def test_keyword_mode_finds_any_word_stemmed_where_the_list_search_finds_nothing(notes):
    question = "why did the deploying fail?"
    listed = bearer_client(notes["token"]).get("/v1/projects/alpha/memory", {"q": question})
    assert listed.status_code == 200 and listed.json()["items"] == []
    response = _recall(notes["token"], q=question, mode="keyword")
    assert response.status_code == 200
    body = response.json()
    assert body["mode"] == "keyword"
    assert _seqs(body)[0] == 1  # "Deployment failed": deploy* and fail* both match
    first = body["items"][0]
    assert first["ranks"] == {"keyword": 1, "semantic": None}
    assert first["kind"] == "entry"


def test_keyword_mode_ignores_stop_words_and_word_order(notes):
    # Every word here but "replica" and "orders" is a stop word or absent.
    body = _recall(notes["token"], q="what is the replica of the orders", mode="keyword").json()
    assert _seqs(body) == [4]
    body = _recall(notes["token"], q="the of and is what", mode="keyword").json()
    assert body["items"] == []


def test_an_identifier_is_found_by_keyword(notes):
    body = _recall(notes["token"], q="ERR_CONN_RESET", mode="keyword").json()
    assert _seqs(body) == [3]
    body = _recall(notes["token"], q="client_max_body_size").json()
    assert _seqs(body)[0] == 3


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's ranking")
def test_a_large_project_on_postgresql_scores_every_rare_match_and_the_newest_common_ones(
        alpha, monkeypatch):
    """Past EXACT_RANK_ENTRIES the planner's estimates pick the candidates (keyword.py).

    The thresholds are lowered so that a 40-entry project is "large": the
    rare word's one old entry is still found first, and of the entries
    holding only the common word, only the newest RECENT_WINDOW compete.
    """
    from memory.recall import keyword

    _append(alpha.project, "bug", "The zanzibar gateway deploy broke checkout.")
    for n in range(39):
        _append(alpha.project, "note", f"Routine deploy number {n} went out.")
    with connection.cursor() as cursor:  # the statistics autovacuum would gather
        cursor.execute("ANALYZE memory_memoryentry")
    keyword.forget_statistics()
    monkeypatch.setattr(keyword, "EXACT_RANK_ENTRIES", 10)
    monkeypatch.setattr(keyword, "RARE_MATCHES", 5)
    monkeypatch.setattr(keyword, "RECENT_WINDOW", 8)
    body = _recall(alpha.token, q="zanzibar deploy", mode="keyword", limit=50).json()
    seqs = _seqs(body)
    assert seqs[0] == 1
    assert sorted(seqs[1:]) == list(range(33, 41))
    # Within the exact threshold the same question scores every match.
    monkeypatch.setattr(keyword, "EXACT_RANK_ENTRIES", 40)
    body = _recall(alpha.token, q="zanzibar deploy", mode="keyword", limit=50).json()
    assert _seqs(body)[0] == 1
    assert sorted(_seqs(body)) == list(range(1, 41))


def test_a_stems_estimated_share_sums_its_words_and_an_unlisted_word_is_rarer_than_any():
    from memory.recall.keyword import _LexemeStatistics

    pairs = sorted({"deploy": 0.30, "deployed": 0.10, "deployment": 0.05, "depot": 0.02,
                    "zebra": 0.01}.items())
    statistics = _LexemeStatistics(
        lexemes=[lexeme for lexeme, _ in pairs],
        cumulative=[0.0, *itertools.accumulate(share for _, share in pairs)],
        least=0.01)
    assert statistics.share("'deploy':*") == pytest.approx(0.45)
    assert statistics.share("'deploy'") == pytest.approx(0.30)
    assert statistics.share("'dep':*") == pytest.approx(0.47)
    assert statistics.share("'zebra':*") == pytest.approx(0.01)
    assert statistics.share("'deployments'") == pytest.approx(0.005)
    assert statistics.share("'quokka':*") == pytest.approx(0.005)


def test_the_list_search_keeps_its_every_word_meaning(notes):
    client = bearer_client(notes["token"])
    both = client.get("/v1/projects/alpha/memory", {"q": "orders postgresql"}).json()
    assert [item["seq"] for item in both["items"]] == [4]
    one_missing = client.get("/v1/projects/alpha/memory", {"q": "orders mysql"}).json()
    assert one_missing["items"] == []


# --- semantic and hybrid ------------------------------------------------------------------


def test_before_the_indexer_ran_the_index_says_so_and_keyword_still_answers(notes):
    body = _recall(notes["token"], q="solo pool workers").json()
    assert body["index"] == {"model": "hashing-1024-v1", "through_seq": 0, "head_seq": 5}
    assert _seqs(body)[0] == 2
    assert body["items"][0]["ranks"]["semantic"] is None


def test_after_the_indexer_every_mode_ranks_and_the_index_is_current(notes):
    result = _follow()
    assert result.seen == 5 and result.indexed == 5
    assert EntryVector.objects.filter(project=notes["project"]).count() == 5
    for mode in ("hybrid", "semantic", "keyword"):
        body = _recall(notes["token"], q="solo pool workers on windows", mode=mode).json()
        assert body["mode"] == mode
        assert body["index"] == {"model": "hashing-1024-v1", "through_seq": 5, "head_seq": 5}
        assert _seqs(body)[0] == 2, mode
        scores = [item["score"] for item in body["items"]]
        assert scores == sorted(scores, reverse=True)
    semantic = _recall(notes["token"], q="solo pool workers on windows",
                       mode="semantic").json()
    # The semantic ranking has every indexed entry, ranked 1..n in order.
    assert [item["ranks"]["semantic"] for item in semantic["items"]] == [1, 2, 3, 4, 5]
    assert all(item["ranks"]["keyword"] is None for item in semantic["items"])
    hybrid = _recall(notes["token"], q="solo pool workers on windows").json()
    assert hybrid["items"][0]["ranks"] == {"keyword": 1, "semantic": 1}


def test_an_item_carries_the_entry_exactly_as_the_list_shows_it(notes):
    _follow()
    listed = {item["seq"]: item for item in bearer_client(notes["token"]).get(
        "/v1/projects/alpha/memory").json()["items"]}
    for item in _recall(notes["token"], q="database migrations deployment").json()["items"]:
        extra = {key: item.pop(key) for key in ("kind", "score", "ranks")}
        assert item == listed[item["seq"]]
        assert isinstance(extra["score"], float)


def test_limit_bounds_the_answer(notes):
    _follow()
    body = _recall(notes["token"], q="the database workers upload staging", mode="semantic",
                   limit=2).json()
    assert len(body["items"]) == 2
    assert len(_recall(notes["token"], q="anything at all", mode="semantic").json()["items"]) == 5


def test_the_index_follows_new_appends(notes):
    _follow()
    _append(notes["project"], "fix", "Pinned kombu to 5.3 after the broker heartbeat bug.")
    body = _recall(notes["token"], q="kombu broker heartbeat", mode="semantic").json()
    assert body["index"]["through_seq"] == 5 and body["index"]["head_seq"] == 6
    assert 6 not in _seqs(body)
    _follow()
    body = _recall(notes["token"], q="kombu broker heartbeat", mode="semantic").json()
    assert body["index"]["through_seq"] == 6
    assert _seqs(body)[0] == 6


# --- views and filters ------------------------------------------------------------------


def test_the_current_view_leaves_out_a_corrected_entry_and_all_keeps_it(notes):
    correction = _append(notes["project"], "decision",
                         "Orders move to PostgreSQL 17; the reporting replica is gone.",
                         corrects=4)
    _follow()
    for mode in ("hybrid", "semantic", "keyword"):
        current = _seqs(_recall(notes["token"], q="orders postgresql replica", mode=mode).json())
        assert 4 not in current and current[0] == correction.seq, mode
        every = _seqs(_recall(notes["token"], q="orders postgresql replica", mode=mode,
                              view="all").json())
        assert {4, correction.seq} <= set(every[:2]), mode


def test_the_semantic_ranker_takes_more_when_its_best_are_all_corrected(alpha):
    """_semantic drops corrected entries from its best and widens until enough remain."""
    originals = [_append(alpha.project, "note", "Orders replica lag on PostgreSQL")
                 for _ in range(4)]
    kept = _append(alpha.project, "note", "Orders replica lag on PostgreSQL, seen in staging.")
    for original in originals:
        _append(alpha.project, "note", f"Zebra crossing number {original.seq}.",
                corrects=original.seq)
    _follow()
    query = vectors.embedder().embed(["Orders replica lag on PostgreSQL"])[0]
    progress = vectors.progress_of(alpha.project, vectors.embedder().model_id)
    best, _ = ranking._semantic(alpha.project, query, progress, None, True, count=1)
    assert [entry_id for entry_id, _ in best] == [kept.pk]
    every, _ = ranking._semantic(alpha.project, query, progress, None, False, count=1)
    assert every[0][0] in {original.pk for original in originals}


def test_the_list_filters_apply_in_every_mode(notes):
    _follow()
    for mode in ("hybrid", "semantic", "keyword"):
        body = _recall(notes["token"], q="database deployment orders", mode=mode,
                       category="decision").json()
        assert body["items"] and {item["category"] for item in body["items"]} == {"decision"}
        body = _recall(notes["token"], q="upload client reset", mode=mode, source="maria").json()
        assert _seqs(body) == [3]
    later = timezone.now() + timedelta(days=1)
    assert _recall(notes["token"], q="orders", since=later.isoformat()).json()["items"] == []
    assert _seqs(_recall(notes["token"], q="orders postgresql",
                         until=later.isoformat()).json())[0] == 4
    earlier = timezone.now() - timedelta(days=1)
    assert _recall(notes["token"], q="orders", until=earlier.isoformat()).json()["items"] == []


def test_post_takes_the_same_fields_as_a_json_body(notes):
    _follow()
    task = "Fix the upload client. " + "It keeps failing with a reset connection. " * 60
    assert len(task) > 2000
    response = bearer_client(notes["token"]).post(
        "/v1/projects/alpha/recall", {"q": task, "limit": 3, "mode": "hybrid"}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert len(body["items"]) == 3 and _seqs(body)[0] == 3
    get = _recall(notes["token"], q="upload client reset connection", limit=3).json()
    assert _seqs(get)[0] == 3


# --- bad input ----------------------------------------------------------------------------


def _snapshot() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for model in stored_models()}


@pytest.mark.parametrize("params, field", [
    ({}, "q"),
    ({"q": ""}, "q"),
    ({"q": "   "}, "q"),
    ({"q": "x" * 4001}, "q"),
    ({"q": "ok", "limit": "0"}, "limit"),
    ({"q": "ok", "limit": "51"}, "limit"),
    ({"q": "ok", "limit": "ten"}, "limit"),
    ({"q": "ok", "limit": "1.5"}, "limit"),
    ({"q": "ok", "mode": "fuzzy"}, "mode"),
    ({"q": "ok", "view": "newest"}, "view"),
    ({"q": "ok", "since": "yesterday"}, "since"),
    ({"q": "ok", "until": "tomorrow"}, "until"),
    ({"q": "ok", "page": "2"}, "page"),
])
def test_bad_input_is_a_400_naming_the_field_and_changes_nothing(notes, params, field):
    before = _snapshot()
    response = _recall(notes["token"], **params)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert field in body["fields"]
    assert _snapshot() == before
    post = bearer_client(notes["token"]).post("/v1/projects/alpha/recall", params, format="json")
    assert post.status_code == 400 and field in post.json()["fields"]
    assert _snapshot() == before


def test_a_repeated_parameter_and_a_non_object_body_are_refused(notes):
    response = bearer_client(notes["token"]).get("/v1/projects/alpha/recall?q=a&q=b")
    assert response.status_code == 400 and "q" in response.json()["fields"]
    response = bearer_client(notes["token"]).post("/v1/projects/alpha/recall", ["q"],
                                                  format="json")
    assert response.status_code == 400


def test_a_long_q_within_the_limit_is_accepted(notes):
    assert _recall(notes["token"], q="deployment " * 363).status_code == 200  # 3,993 chars


def test_another_projects_token_gets_404_and_no_token_401(notes, beta):
    assert _recall(beta.token, q="orders").status_code == 404
    assert bearer_client(beta.token).post("/v1/projects/alpha/recall", {"q": "orders"},
                                          format="json").status_code == 404
    response = bearer_client().get("/v1/projects/alpha/recall", {"q": "orders"})
    assert response.status_code == 401
    assert _recall(notes["token"], project_id="nosuch", q="orders").status_code == 404


def test_a_project_recalls_only_its_own_entries(notes, beta):
    _append(beta.project, "decision", "Orders stay on PostgreSQL 16 in beta too.")
    _follow()
    for mode in ("hybrid", "semantic", "keyword"):
        body = _recall(beta.token, project_id="beta", q="orders postgresql", mode=mode).json()
        assert [item["project_id"] for item in body["items"]] == ["beta"], mode


# --- the model cannot load ------------------------------------------------------------------


def test_without_a_model_recall_answers_in_keyword_mode_and_says_why(notes, settings):
    _follow()
    settings.RECALL_MODEL = "off"
    for mode in ("hybrid", "semantic"):
        response = _recall(notes["token"], q="orders postgresql", mode=mode)
        assert response.status_code == 200
        body = response.json()
        assert body["mode"] == "keyword"
        assert "GEDWEB_RECALL_MODEL=off" in body["degraded"]
        assert _seqs(body) == [4]
    assert "degraded" not in _recall(notes["token"], q="orders", mode="keyword").json()


def test_recall_writes_nothing(notes):
    _follow()
    before = _snapshot()
    cursor = list(RecallCursor.objects.values_list("model", "through_id"))
    progress = list(RecallProgress.objects.values_list("project_id", "through_seq",
                                                       "generation"))
    for mode in ("hybrid", "semantic", "keyword"):
        assert _recall(notes["token"], q="orders", mode=mode).status_code == 200
    assert _snapshot() == before
    assert list(RecallCursor.objects.values_list("model", "through_id")) == cursor
    assert list(RecallProgress.objects.values_list("project_id", "through_seq",
                                                   "generation")) == progress


# --- the hybrid blend's weight ------------------------------------------------------------


@pytest.mark.parametrize("text, weight", [
    ("why do background task processes die on a windows laptop?", ranking.SEMANTIC_WEIGHT),
    ("What breed is Nadia's dog?", ranking.NAMED_SEMANTIC_WEIGHT),
    ("ERR_CONN_RESET in the upload client", ranking.IDENTIFIER_SEMANTIC_WEIGHT),
    ("settings/production.py", ranking.IDENTIFIER_SEMANTIC_WEIGHT),
    ("HAR-412", ranking.IDENTIFIER_SEMANTIC_WEIGHT),
    ("where is parseManifest called", ranking.IDENTIFIER_SEMANTIC_WEIGHT),
    ("the HTTP 413 on uploads", ranking.IDENTIFIER_SEMANTIC_WEIGHT),
    # A long task text holding an identifier is a question, not a look-up.
    ("please fix the failing upload test in the client and then tell me why it failed "
     "with E1102", ranking.SEMANTIC_WEIGHT),
    ("Deployment failed, why?", ranking.SEMANTIC_WEIGHT),  # a capital first word is no name
    ("1234 5678", ranking.SEMANTIC_WEIGHT),
])
def test_the_semantic_weight_follows_the_querys_shape(text, weight):
    assert ranking.semantic_weight(text) == weight


def test_the_semantic_weight_is_linear_in_a_hostile_text():
    # One pass per word: 4,000 characters of one word or of many take no backtracking.
    for text in ("a" * 4000, "aB" * 2000, ("Word " * 800)[:4000], "-" * 4000):
        assert ranking.semantic_weight(text) in (ranking.SEMANTIC_WEIGHT,
                                                 ranking.NAMED_SEMANTIC_WEIGHT,
                                                 ranking.IDENTIFIER_SEMANTIC_WEIGHT)


def test_blend_weighs_normalised_scores():
    blended = ranking.blend({1: 0.9, 2: 0.5, 3: 0.1}, {2: 8.0, 4: 2.0}, 0.75)
    assert blended == pytest.approx({1: 0.75, 2: 0.75 * 0.5 + 0.25, 3: 0.0, 4: 0.0})


# --- documents ------------------------------------------------------------------------------

ADR = """# ADR 0007: Queue

Context first.

## Decision

Background jobs move from cron to a Redis queue served by rq workers.

## Consequences

The kestrel dashboard shows the queue depth.
"""


def _put(project: Any, path: str, content: str, expected: int | None = None) -> None:
    from memory.documents import document_put

    document_put(project=project, path=path, content=content, author="agent",
                 expected_revision=expected)


def _index_documents() -> None:
    while indexer.follow_documents_once(vectors.embedder()).seen:
        pass


def test_a_documents_matching_section_is_recalled_beside_entries(notes):
    _put(notes["project"], "adr/0007-queue.md", ADR)
    _follow()
    _index_documents()
    for mode in ("hybrid", "semantic", "keyword"):
        body = _recall(notes["token"], q="background jobs redis queue workers", mode=mode).json()
        documents = [item for item in body["items"] if item["kind"] == "document"]
        assert documents, mode
        first = documents[0]
        assert (first["path"], first["revision"]) == ("adr/0007-queue.md", 1)
        assert first["section"]["heading"] == "Decision"
        assert first["section"]["text"].startswith("## Decision\n\nBackground jobs move")
        assert first["author"] == "agent" and first["created_at"]
        assert set(first) == {"kind", "path", "revision", "author", "created_at", "section",
                              "score", "ranks"}
    # A category or source filter names entries only.
    body = _recall(notes["token"], q="background jobs redis queue", category="decision").json()
    assert {item["kind"] for item in body["items"]} == {"entry"}


def test_only_a_documents_current_revision_is_recalled(notes):
    _put(notes["project"], "adr/0007-queue.md", ADR)
    _index_documents()
    _put(notes["project"], "adr/0007-queue.md",
         ADR.replace("a Redis queue served by rq workers", "Celery on RabbitMQ"), expected=1)
    body = _recall(notes["token"], q="rq workers redis", mode="keyword").json()
    assert not [item for item in body["items"] if item["kind"] == "document"]
    _index_documents()
    from memory.models import DocumentVector

    assert set(DocumentVector.objects.values_list("revision__revision", flat=True)) == {2}
    body = _recall(notes["token"], q="celery rabbitmq", mode="semantic").json()
    revisions = {item["revision"] for item in body["items"] if item["kind"] == "document"}
    assert revisions == {2}
