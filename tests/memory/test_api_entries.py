"""POST/GET /v1/projects/{id}/memory, entries by seq or uuid, verify and memory.md."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from gedweb.lib.chain import GENESIS_HASH, entry_hash
from gedweb.lib.mirror import render_full, render_header
from memory import mirror, services
from memory.models import MemoryEntry, format_timestamp

ENTRY_KEYS = {
    "id",
    "seq",
    "project_id",
    "category",
    "content",
    "source",
    "corrects",
    "author",
    "created_at",
    "content_sha256",
    "redacts",
    "redacted",
    "prev_hash",
    "hash",
    "corrected_by",
}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$")
UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
ENTRY = {"category": "decision", "content": "use postgres"}


def memory_url(project_id: str) -> str:
    return f"/v1/projects/{project_id}/memory"


def post(client, project_id: str, /, **body):
    return client.post(memory_url(project_id), body, format="json")


def post_raw(client, project_id: str, raw: bytes):
    return client.generic("POST", memory_url(project_id), raw, content_type="application/json")


def add(project, content: str = "x", **fields) -> MemoryEntry:
    fields.setdefault("category", "note")
    return services.memory_entry_create(
        project=project, author="default", content=content, **fields
    ).entry


def count(project=None) -> int:
    entries = MemoryEntry.objects.all()
    return entries.filter(project=project).count() if project else entries.count()


def seqs(response) -> list[int]:
    return [item["seq"] for item in response.json()["items"]]


def assert_validation_error(response, *fields: str) -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "validation_error"
    assert set(body["fields"]) == set(fields)


@pytest.fixture
def client(alpha, client_for):
    return client_for(alpha.token)


@pytest.fixture
def many(alpha) -> list[MemoryEntry]:
    return [add(alpha.project, f"entry number {n}") for n in range(1, 251)]


# --- creating ---------------------------------------------------------------------


def test_it_returns_exactly_the_contract_fields(alpha, client):
    response = post(client, alpha.id, **ENTRY)

    assert response.status_code == 201
    body = response.json()
    assert set(body) == ENTRY_KEYS
    assert body["project_id"] == "alpha"
    assert body["category"] == "decision"
    assert body["content"] == "use postgres"
    assert body["corrects"] is None
    assert body["corrected_by"] == []
    assert re.fullmatch(UUID4, body["id"])
    assert {**MemoryEntry.objects.get().chain_row(), "redacted": False, "corrected_by": []} == body


def test_it_numbers_entries_from_one_without_gaps(alpha, client):
    numbers = [
        post(client, alpha.id, category="c", content=f"n{n}").json()["seq"] for n in range(5)
    ]

    assert numbers == [1, 2, 3, 4, 5]
    assert list(MemoryEntry.objects.order_by("seq").values_list("seq", flat=True)) == numbers


def test_it_numbers_each_project_separately(alpha, beta, client, client_for):
    post(client, alpha.id, **ENTRY)
    post(client, alpha.id, **ENTRY)

    response = post(client_for(beta.token), beta.id, **ENTRY)

    assert response.json()["seq"] == 1
    assert count(beta.project) == 1
    assert count(alpha.project) == 2


def test_the_first_entry_links_to_sixty_four_zeros(alpha, client):
    body = post(client, alpha.id, **ENTRY).json()

    assert body["prev_hash"] == "0" * 64 == GENESIS_HASH
    assert MemoryEntry.objects.get().prev_hash == "0" * 64


def test_each_entry_links_to_the_previous_hash(alpha, client):
    bodies = [post(client, alpha.id, category="c", content=f"n{n}").json() for n in range(3)]

    assert [b["prev_hash"] for b in bodies[1:]] == [b["hash"] for b in bodies[:-1]]
    assert list(MemoryEntry.objects.order_by("seq").values_list("hash", flat=True)) == [
        b["hash"] for b in bodies
    ]


def test_the_hash_recomputes_from_the_chained_fields(alpha, client):
    first = post(client, alpha.id, category="decision", content="naïve café ✓").json()
    second = post(
        client, alpha.id, category="fix", content="x", source="ci", corrects=first["id"]
    ).json()

    for body in (first, second):
        assert re.fullmatch(r"[0-9a-f]{64}", body["hash"])
        assert entry_hash(body["prev_hash"], body) == body["hash"]
    assert services.memory_chain_verify(project=alpha.project).ok


def test_created_at_is_utc_with_six_fractional_digits(alpha, client):
    body = post(client, alpha.id, **ENTRY).json()

    assert TIMESTAMP.match(body["created_at"])
    assert format_timestamp(MemoryEntry.objects.get().created_at) == body["created_at"]


def test_created_at_follows_seq_order(alpha, client):
    bodies = [post(client, alpha.id, category="c", content=f"n{n}").json() for n in range(3)]

    stamps = [body["created_at"] for body in bodies]
    assert stamps == sorted(stamps)
    assert all(TIMESTAMP.match(stamp) for stamp in stamps)
    stored = MemoryEntry.objects.order_by("seq").values_list("created_at", flat=True)
    assert [format_timestamp(moment) for moment in stored] == stamps


def test_created_at_still_increases_with_seq_when_the_clock_steps_back(
    alpha, client, monkeypatch
):
    first = post(client, alpha.id, category="c", content="before the step").json()
    stored_first = MemoryEntry.objects.get(seq=1).created_at
    stepped_back = stored_first - timedelta(hours=1)
    # The service's own clock (memory.services imports django.utils.timezone).
    monkeypatch.setattr(services.timezone, "now", lambda: stepped_back)

    second = post(client, alpha.id, category="c", content="after the step").json()

    stored_second = MemoryEntry.objects.get(seq=2).created_at
    assert stored_second > stored_first
    assert stored_second - stored_first < timedelta(seconds=1)  # clamped, not the far future
    assert second["created_at"] > first["created_at"]
    assert services.memory_chain_verify(project=alpha.project).ok


def test_the_author_is_the_token_name(alpha, client, client_for):
    _, raw = services.project_token_create(project=alpha.project, name="ci-bot")

    default = post(client, alpha.id, **ENTRY).json()
    named = post(client_for(raw), alpha.id, **ENTRY).json()

    assert default["author"] == "default"
    assert named["author"] == "ci-bot"
    assert list(MemoryEntry.objects.order_by("seq").values_list("author", flat=True)) == [
        "default",
        "ci-bot",
    ]


def test_the_admin_token_writes_as_admin(alpha, admin_client):
    response = post(admin_client, alpha.id, **ENTRY)

    assert response.status_code == 201
    assert response.json()["author"] == "admin"
    assert MemoryEntry.objects.get().author == "admin"


def test_the_author_cannot_be_supplied(alpha, client):
    response = post(client, alpha.id, **ENTRY, author="someone-else")

    assert_validation_error(response, "author")
    assert count() == 0


def test_source_defaults_to_operator(alpha, client):
    body = post(client, alpha.id, **ENTRY).json()

    assert body["source"] == "operator"
    assert MemoryEntry.objects.get().source == "operator"


def test_it_keeps_a_given_source(alpha, client):
    body = post(client, alpha.id, **ENTRY, source="ferryman bridge/1.2 (pid 7)").json()

    assert body["source"] == "ferryman bridge/1.2 (pid 7)"
    assert MemoryEntry.objects.get().source == "ferryman bridge/1.2 (pid 7)"


def test_it_keeps_content_exactly_as_sent(alpha, client):
    content = "  leading and trailing whitespace\n\n```python\nx = 1\n```\n\t"

    body = post(client, alpha.id, category="c", content=content).json()

    assert body["content"] == content
    assert MemoryEntry.objects.get().content == content


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "category",
    ["Decision", "1abc", "a" * 65, "", "a b", "é", "-a", "_a", "a/b", "a\nb", "decision\n"],
    ids=["uppercase", "digit-first", "65-chars", "empty", "space", "non-ascii", "hyphen-first",
         "underscore-first", "slash", "newline", "trailing-newline"],
)
def test_it_refuses_a_bad_category(alpha, client, category):
    response = post(client, alpha.id, category=category, content="x")

    assert_validation_error(response, "category")
    assert count() == 0


@pytest.mark.parametrize("category", ["a", "a" * 64, "a.b-c_d9", "z0"])
def test_it_accepts_a_good_category(alpha, client, category):
    response = post(client, alpha.id, category=category, content="x")

    assert response.status_code == 201
    assert MemoryEntry.objects.get().category == category


@pytest.mark.parametrize("content", ["", " ", "\n\t \r\n"], ids=["empty", "space", "whitespace"])
def test_it_refuses_blank_content(alpha, client, content):
    response = post(client, alpha.id, category="c", content=content)

    assert_validation_error(response, "content")
    assert count() == 0


def test_it_accepts_content_of_exactly_32000_bytes(alpha, client):
    response = post(client, alpha.id, category="c", content="x" * 32_000)

    assert response.status_code == 201
    assert len(MemoryEntry.objects.get().content.encode()) == 32_000


def test_it_refuses_content_of_32001_bytes(alpha, client):
    response = post(client, alpha.id, category="c", content="x" * 32_001)

    assert_validation_error(response, "content")
    assert count() == 0


def test_it_counts_content_in_utf8_bytes_not_characters(alpha, client):
    accepted = post(client, alpha.id, category="c", content="€" * 8_000)
    refused = post(client, alpha.id, category="c", content="€" * 10_667)

    assert accepted.status_code == 201
    assert_validation_error(refused, "content")
    assert MemoryEntry.objects.get().content == "€" * 8_000


def test_it_refuses_nul_in_content(alpha, client):
    response = post(client, alpha.id, category="c", content="before\x00after")

    assert_validation_error(response, "content")
    assert count() == 0


@pytest.mark.parametrize("field", ["content", "source", "category"])
def test_it_refuses_a_lone_surrogate(alpha, client, field):
    fields = {"category": '"c"', "content": '"x"', "source": '"s"'}
    fields[field] = '"a\\ud800b"'
    raw = "{" + ", ".join(f'"{name}": {value}' for name, value in fields.items()) + "}"

    response = post_raw(client, alpha.id, raw.encode())

    assert_validation_error(response, field)
    assert count() == 0


@pytest.mark.parametrize(
    "source",
    ["", "x" * 129, "line\nbreak", "tab\there", "cr\r", "bell\x07"],
    ids=["empty", "129-chars", "newline", "tab", "carriage-return", "control"],
)
def test_it_refuses_a_bad_source(alpha, client, source):
    response = post(client, alpha.id, category="c", content="x", source=source)

    assert_validation_error(response, "source")
    assert count() == 0


def test_it_accepts_a_source_of_128_characters(alpha, client):
    response = post(client, alpha.id, category="c", content="x", source="s" * 128)

    assert response.status_code == 201
    assert MemoryEntry.objects.get().source == "s" * 128


@pytest.mark.parametrize(
    ("body", "bad"),
    [
        ({"category": 5, "content": "x"}, {"category"}),
        ({"category": "c", "content": None}, {"content"}),
        ({"category": "c", "content": 12}, {"content"}),
        ({"category": "c", "content": ["x"]}, {"content"}),
        ({"category": True, "content": {"a": 1}}, {"category", "content"}),
        ({"category": "c", "content": "x", "source": 7}, {"source"}),
        ({"category": "c", "content": "x", "source": None}, {"source"}),
        ({"category": None, "content": None, "source": False}, {"category", "content", "source"}),
    ],
)
def test_it_refuses_non_string_values(alpha, client, body, bad):
    response = client.post(memory_url(alpha.id), body, format="json")

    assert_validation_error(response, *bad)
    assert count() == 0


@pytest.mark.parametrize(
    ("body", "bad"),
    [
        ({}, {"category", "content"}),
        ({"category": "c"}, {"content"}),
        ({"content": "x"}, {"category"}),
    ],
)
def test_it_refuses_missing_fields(alpha, client, body, bad):
    response = client.post(memory_url(alpha.id), body, format="json")

    assert_validation_error(response, *bad)
    assert count() == 0


def test_it_names_every_bad_field(alpha, client):
    response = post(client, alpha.id, category="Bad", content=" ", source="")

    assert_validation_error(response, "category", "content", "source")
    assert count() == 0


def test_it_names_bad_types_and_bad_values_together(alpha, client):
    response = post(client, alpha.id, category=5, content=" ", source="a\nb")

    assert_validation_error(response, "category", "content", "source")
    assert count() == 0


@pytest.mark.parametrize(
    "field",
    ["id", "seq", "hash", "prev_hash", "author", "created_at", "project_id", "corrected_by"],
)
def test_it_refuses_server_fields(alpha, client, field):
    value = {"seq": 1, "corrected_by": []}.get(field, "0" * 64 if "hash" in field else "x")

    response = post(client, alpha.id, **ENTRY, **{field: value})

    assert_validation_error(response, field)
    assert "server" in response.json()["fields"][field][0]
    assert count() == 0


@pytest.mark.parametrize("field", ["tags", "Category", "metadata"])
def test_it_refuses_unknown_fields(alpha, client, field):
    response = post(client, alpha.id, **ENTRY, **{field: "x"})

    assert_validation_error(response, field)
    assert count() == 0


# --- corrections ----------------------------------------------------------------


def test_it_corrects_an_entry_by_uuid(alpha, client):
    first = post(client, alpha.id, **ENTRY).json()

    response = post(
        client, alpha.id, category="decision", content="use sqlite", corrects=first["id"]
    )

    assert response.status_code == 201
    correction = response.json()
    assert correction["corrects"] == first["id"]
    assert client.get(f"{memory_url(alpha.id)}/{first['id']}").json()["corrected_by"] == [
        correction["id"]
    ]
    assert MemoryEntry.objects.get(seq=2).corrects.seq == 1


def test_it_corrects_an_entry_by_seq(alpha, client):
    first = post(client, alpha.id, **ENTRY).json()

    response = post(client, alpha.id, category="decision", content="use sqlite", corrects=1)

    assert response.status_code == 201
    correction = response.json()
    assert correction["corrects"] == first["id"]
    assert client.get(f"{memory_url(alpha.id)}/1").json()["corrected_by"] == [correction["id"]]
    assert MemoryEntry.objects.get(seq=2).corrects_id == MemoryEntry.objects.get(seq=1).pk


def test_it_lists_every_correction_in_seq_order(alpha, client):
    first = post(client, alpha.id, **ENTRY).json()
    later = [post(client, alpha.id, **ENTRY, corrects=1).json()["id"] for _ in range(3)]

    detail = client.get(f"{memory_url(alpha.id)}/1").json()

    assert detail["corrected_by"] == later
    assert detail["id"] == first["id"]
    assert MemoryEntry.objects.filter(corrects__seq=1).count() == 3


def test_it_refuses_a_correction_of_another_projects_entry(alpha, beta, client):
    foreign = add(beta.project, "beta's entry")
    add(alpha.project, "alpha's entry")

    response = post(client, alpha.id, **ENTRY, corrects=str(foreign.uuid))

    assert_validation_error(response, "corrects")
    assert count(alpha.project) == 1
    assert count(beta.project) == 1


@pytest.mark.parametrize("corrects", [2, "2", "3f2c7a3e-8d4b-4f6e-9a1b-2c3d4e5f6a7b"])
def test_it_refuses_a_correction_of_a_missing_entry(alpha, client, corrects):
    add(alpha.project)

    response = post(client, alpha.id, **ENTRY, corrects=corrects)

    assert_validation_error(response, "corrects")
    assert count() == 1


@pytest.mark.parametrize("corrects", [0, -1, True, 1.5, "not-a-uuid", [1], {"seq": 1}])
def test_it_refuses_a_malformed_correction_reference(alpha, client, corrects):
    add(alpha.project)

    response = post(client, alpha.id, **ENTRY, corrects=corrects)

    assert_validation_error(response, "corrects")
    assert count() == 1


def test_it_accepts_a_null_correction(alpha, client):
    response = post(client, alpha.id, **ENTRY, corrects=None)

    assert response.status_code == 201
    assert MemoryEntry.objects.get().corrects_id is None


def test_view_current_leaves_out_corrected_entries(alpha, client):
    add(alpha.project, "one")
    add(alpha.project, "two")
    add(alpha.project, "one, corrected", corrects=1)
    add(alpha.project, "one, corrected again", corrects=3)

    everything = client.get(memory_url(alpha.id))
    current = client.get(memory_url(alpha.id), {"view": "current"})

    assert seqs(everything) == [1, 2, 3, 4]
    assert current.status_code == 200
    assert seqs(current) == [2, 4]
    assert count() == 4


# --- single entries ---------------------------------------------------------------


def test_it_reads_an_entry_by_seq(alpha, client):
    created = post(client, alpha.id, **ENTRY).json()

    response = client.get(f"{memory_url(alpha.id)}/1")

    assert response.status_code == 200
    assert response.json() == created
    assert count() == 1


def test_it_reads_an_entry_by_uuid(alpha, client):
    add(alpha.project)
    created = post(client, alpha.id, **ENTRY).json()

    response = client.get(f"{memory_url(alpha.id)}/{created['id']}")

    assert response.status_code == 200
    assert response.json() == created
    assert count() == 2


def test_it_hides_another_projects_entry_behind_its_own_project_path(alpha, beta, client):
    foreign = add(beta.project, "beta's secret")

    response = client.get(f"{memory_url(alpha.id)}/{foreign.uuid}")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert b"secret" not in response.content
    assert count(beta.project) == 1


def test_it_reads_seq_within_the_projects_own_memory(alpha, beta, client, client_for):
    add(alpha.project, "alpha one")

    response = client_for(beta.token).get(f"{memory_url(beta.id)}/1")

    assert response.status_code == 404
    assert count(beta.project) == 0


# --- pagination ------------------------------------------------------------------------


def test_it_lists_an_empty_project(alpha, client):
    response = client.get(memory_url(alpha.id))

    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}
    assert count() == 0


def test_it_lists_one_hundred_entries_by_default(alpha, client, many):
    response = client.get(memory_url(alpha.id))

    assert response.status_code == 200
    body = response.json()
    assert seqs(response) == list(range(1, 101))
    assert body["next_cursor"] == 100
    assert all(set(item) == ENTRY_KEYS for item in body["items"])
    assert count() == 250


def test_it_lists_up_to_five_hundred(alpha, client, many):
    response = client.get(memory_url(alpha.id), {"limit": 500})

    assert response.status_code == 200
    assert seqs(response) == list(range(1, 251))
    assert response.json()["next_cursor"] is None
    assert count() == 250


@pytest.mark.parametrize("limit", [-1, "2.5", "ten"])
def test_it_refuses_a_limit_that_is_not_a_whole_number(alpha, client, limit):
    add(alpha.project)

    response = client.get(memory_url(alpha.id), {"limit": limit})

    assert_validation_error(response, "limit")
    assert count() == 1


def walk(client, url: str, cursor_name: str, **query) -> tuple[list[int], list]:
    seen: list[int] = []
    cursors: list = []
    params = dict(query)
    for _ in range(100):
        response = client.get(url, params)
        assert response.status_code == 200
        body = response.json()
        seen.extend(item["seq"] for item in body["items"])
        cursors.append(body["next_cursor"])
        if body["next_cursor"] is None:
            return seen, cursors
        params[cursor_name] = body["next_cursor"]
    raise AssertionError("pagination did not end")


def test_it_walks_every_entry_once_in_ascending_order(alpha, client, many):
    seen, cursors = walk(client, memory_url(alpha.id), "after")

    assert seen == list(range(1, 251))
    assert cursors == [100, 200, None]
    assert count() == 250


def test_it_walks_small_pages_without_gaps(alpha, client, many):
    seen, cursors = walk(client, memory_url(alpha.id), "after", limit=7)

    assert seen == list(range(1, 251))
    assert len(cursors) == 36
    assert cursors[-1] is None
    assert count() == 250


def test_it_walks_every_entry_once_in_descending_order(alpha, client, many):
    seen, cursors = walk(client, memory_url(alpha.id), "before", order="desc")

    assert seen == list(range(250, 0, -1))
    assert cursors == [151, 51, None]
    assert count() == 250


def test_next_cursor_is_null_when_the_last_page_is_exactly_full(alpha, client):
    for n in range(100):
        add(alpha.project, f"n{n}")

    response = client.get(memory_url(alpha.id), {"limit": 100})

    assert len(response.json()["items"]) == 100
    assert response.json()["next_cursor"] is None
    assert count() == 100


def test_next_cursor_is_set_when_one_more_entry_exists(alpha, client):
    for n in range(101):
        add(alpha.project, f"n{n}")

    first = client.get(memory_url(alpha.id), {"limit": 100}).json()
    second = client.get(memory_url(alpha.id), {"limit": 100, "after": first["next_cursor"]}).json()

    assert first["next_cursor"] == 100
    assert [item["seq"] for item in second["items"]] == [101]
    assert second["next_cursor"] is None
    assert count() == 101


def test_a_cursor_past_the_end_gives_an_empty_page(alpha, client):
    add(alpha.project)

    response = client.get(memory_url(alpha.id), {"after": 1})

    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}
    assert count() == 1


def test_after_and_before_bound_a_range(alpha, client):
    for n in range(10):
        add(alpha.project, f"n{n}")

    response = client.get(memory_url(alpha.id), {"after": 3, "before": 7})

    assert response.status_code == 200
    assert seqs(response) == [4, 5, 6]
    assert response.json()["next_cursor"] is None
    assert count() == 10


# --- filters -------------------------------------------------------------------------


def test_it_filters_by_category(alpha, client):
    add(alpha.project, category="decision")
    add(alpha.project, category="note")
    add(alpha.project, category="decision")

    response = client.get(memory_url(alpha.id), {"category": "decision"})

    assert seqs(response) == [1, 3]
    assert count() == 3


def test_it_filters_by_source(alpha, client):
    add(alpha.project, source="ferryman")
    add(alpha.project)
    add(alpha.project, source="ferryman")

    response = client.get(memory_url(alpha.id), {"source": "ferryman"})

    assert response.status_code == 200
    assert seqs(response) == [1, 3]
    assert all(item["source"] == "ferryman" for item in response.json()["items"])
    assert count() == 3


def test_it_filters_by_time(alpha, client):
    entries = [add(alpha.project, f"n{n}") for n in range(4)]
    since = entries[2].created_at

    at = client.get(memory_url(alpha.id), {"since": format_timestamp(since)})
    zulu = client.get(
        memory_url(alpha.id), {"since": format_timestamp(since).replace("+00:00", "Z")}
    )
    later = client.get(
        memory_url(alpha.id), {"since": format_timestamp(since + timedelta(days=1))}
    )

    assert at.status_code == zulu.status_code == later.status_code == 200
    assert seqs(at) == [3, 4]
    assert seqs(zulu) == [3, 4]
    assert seqs(later) == []
    assert count() == 4


def test_it_combines_filters(alpha, client):
    add(alpha.project, category="decision", source="ferryman")
    add(alpha.project, category="decision")
    add(alpha.project, category="note", source="ferryman")

    response = client.get(memory_url(alpha.id), {"category": "decision", "source": "ferryman"})

    assert response.status_code == 200
    assert seqs(response) == [1]
    assert count() == 3


@pytest.mark.parametrize("name", ["cursor", "page", "offset", "Category"])
def test_it_refuses_an_unknown_query_parameter(alpha, client, name):
    add(alpha.project)

    response = client.get(memory_url(alpha.id), {name: "1"})

    assert_validation_error(response, name)
    assert count() == 1


# --- full-text search ------------------------------------------------------------------


@pytest.fixture
def searchable(alpha) -> None:
    add(alpha.project, "We run Postgres sixteen in production.", category="decision")
    add(alpha.project, "Postgres fifteen was retired last year.", category="note")
    add(alpha.project, "Sixteen candles on the cake.", category="note")
    add(alpha.project, "postgres and SIXTEEN, in another order", category="note")


def test_search_needs_every_word(alpha, client, searchable):
    response = client.get(memory_url(alpha.id), {"q": "POSTGRES sixteen"})

    assert response.status_code == 200
    assert seqs(response) == [1, 4]
    assert count() == 4


def test_search_ignores_case(alpha, client, searchable):
    lower = client.get(memory_url(alpha.id), {"q": "postgres"})
    upper = client.get(memory_url(alpha.id), {"q": "POSTGRES"})

    assert lower.status_code == upper.status_code == 200
    assert seqs(lower) == seqs(upper) == [1, 2, 4]
    assert count() == 4


def test_search_without_a_match_is_empty(alpha, client, searchable):
    response = client.get(memory_url(alpha.id), {"q": "postgres mysql"})

    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}
    assert count() == 4


@pytest.mark.parametrize("q", ["?!", "...", "\"'*()", " - "])
def test_search_for_punctuation_only_is_empty(alpha, client, searchable, q):
    response = client.get(memory_url(alpha.id), {"q": q})

    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}
    assert count() == 4


@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ('postgres"', [1, 2, 4]),
        ("postgres OR cake", []),
        ("NEAR(postgres sixteen)", []),
        ("postgres*", [1, 2, 4]),
        ("-cake", [3]),
        ("content:cake", []),
    ],
)
def test_search_treats_query_syntax_as_words(alpha, client, searchable, q, expected):
    response = client.get(memory_url(alpha.id), {"q": q})

    assert response.status_code == 200
    assert seqs(response) == expected
    assert count() == 4


def test_search_stays_within_the_project(alpha, beta, client, searchable):
    add(beta.project, "postgres sixteen in beta too")

    response = client.get(memory_url(alpha.id), {"q": "postgres sixteen"})

    assert response.status_code == 200
    assert seqs(response) == [1, 4]
    assert all(item["project_id"] == "alpha" for item in response.json()["items"])
    assert count(beta.project) == 1


def test_search_combines_with_category_and_pagination(alpha, client):
    for n in range(30):
        add(
            alpha.project,
            f"entry {n} mentions the {'gateway' if n % 2 else 'scheduler'}",
            category="decision" if n % 3 == 0 else "note",
        )
    expected = [n + 1 for n in range(30) if n % 2 and n % 3 == 0]

    seen, cursors = walk(
        client, memory_url(alpha.id), "after", q="Gateway", category="decision", limit=2
    )

    assert seen == expected == [4, 10, 16, 22, 28]
    assert len(cursors) == 3
    assert cursors[-1] is None
    assert count() == 30


def test_search_combines_with_descending_order(alpha, client, searchable):
    response = client.get(memory_url(alpha.id), {"q": "sixteen", "order": "desc", "limit": 2})

    assert response.status_code == 200
    assert seqs(response) == [4, 3]
    assert response.json()["next_cursor"] == 3
    assert count() == 4


# --- verify ----------------------------------------------------------------------------


def test_verify_reports_a_good_chain(alpha, client):
    bodies = [post(client, alpha.id, category="c", content=f"n{n}").json() for n in range(3)]

    response = client.get(f"{memory_url(alpha.id)}/verify")

    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "entries": 3,
        "head": bodies[-1]["hash"],
        "first_bad_seq": None,
        "redacted": 0,
        "checkpoint": None,
        "problems": [],
    }
    assert count() == 3


def test_verify_reports_an_empty_chain(alpha, client):
    response = client.get(f"{memory_url(alpha.id)}/verify")

    assert response.status_code == 200
    assert response.json() == {"ok": True, "entries": 0, "head": "0" * 64, "first_bad_seq": None,
                               "redacted": 0, "checkpoint": None, "problems": []}
    assert count() == 0


# --- the Markdown mirror -------------------------------------------------------------------


def read_markdown(response) -> bytes:
    return b"".join(response.streaming_content)


def test_memory_md_matches_the_mirror_file_and_a_full_render(
    alpha, client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        post(client, alpha.id, category="decision", content="use postgres")
        post(client, alpha.id, category="code", content="```\n## 9 · forged\n```", source="ci")
        post(client, alpha.id, category="fix", content="café ✓\n", corrects=1)

    response = client.get(f"/v1/projects/{alpha.id}/memory.md")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    served = read_markdown(response)
    rows = MemoryEntry.objects.for_project(alpha.project).chain_rows()
    assert served == mirror.mirror_path(alpha.id).read_bytes()
    assert served == render_full(alpha.id, rows).encode()
    assert b"\n````\n```\n## 9 \xc2\xb7 forged\n```\n````\n" in served
    assert [line[:5] for line in served.split(b"\n") if line.startswith(b"## ")] == [
        b"## 1 ",
        b"## 2 ",
        b"## 9 ",
        b"## 3 ",
    ]
    assert count() == 3


def test_memory_md_of_an_empty_project_is_the_header(alpha, client):
    response = client.get(f"/v1/projects/{alpha.id}/memory.md")

    assert response.status_code == 200
    assert read_markdown(response) == render_header(alpha.id).encode()
    assert count() == 0
