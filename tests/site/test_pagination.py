"""The one keyset paginator (gedweb.pagination) and its pages' face (gedweb.web.keyset_page)."""

from __future__ import annotations

from typing import Any

import pytest
from django.http import Http404

from gedweb.pagination import keyset_slice
from gedweb.web import cursor_value, keyset_page
from governance.models import GovernanceRevision
from memory import services
from memory.models import MemoryEntry
from tests.governance.support import add_evidence, open_work


def entries_of(project: Any, count: int) -> Any:
    for number in range(1, count + 1):
        services.memory_entry_create(project=project, author="t", category="note",
                                     content=f"entry {number}")
    return MemoryEntry.objects.for_project(project)


def seqs(rows: list[Any]) -> list[int]:
    return [row.seq for row in rows]


# --- keyset_slice ---------------------------------------------------------------------------


def test_an_empty_listing_is_an_empty_slice_with_no_cursor(alpha):
    page = keyset_slice(MemoryEntry.objects.for_project(alpha.project), key="seq", limit=3)

    assert (page.items, page.more, page.next_cursor) == ([], False, None)


def test_exactly_one_full_page_has_no_cursor(alpha):
    page = keyset_slice(entries_of(alpha.project, 3), key="seq", limit=3)

    assert seqs(page.items) == [1, 2, 3]
    assert (page.more, page.next_cursor) == (False, None)


def test_one_row_more_than_a_page_gives_the_last_key_as_cursor(alpha):
    rows = entries_of(alpha.project, 4)

    first = keyset_slice(rows, key="seq", limit=3)
    last = keyset_slice(rows, key="seq", limit=3, after=first.next_cursor)

    assert (seqs(first.items), first.next_cursor) == ([1, 2, 3], 3)
    assert (seqs(last.items), last.next_cursor) == ([4], None)


def test_descending_pages_walk_back_with_before(alpha):
    rows = entries_of(alpha.project, 5)

    first = keyset_slice(rows, key="seq", limit=2, descending=True)
    second = keyset_slice(rows, key="seq", limit=2, descending=True, before=first.next_cursor)
    last = keyset_slice(rows, key="seq", limit=2, descending=True, before=second.next_cursor)

    assert [seqs(p.items) for p in (first, second, last)] == [[5, 4], [3, 2], [1]]
    assert [p.next_cursor for p in (first, second, last)] == [4, 2, None]


def test_after_and_before_together_bound_the_range(alpha):
    page = keyset_slice(entries_of(alpha.project, 6), key="seq", limit=10, after=1, before=5)

    assert seqs(page.items) == [2, 3, 4]
    assert page.next_cursor is None


def test_a_cursor_past_the_end_is_an_empty_slice(alpha):
    page = keyset_slice(entries_of(alpha.project, 2), key="seq", limit=5, after=2)

    assert (page.items, page.next_cursor) == ([], None)


def test_the_order_column_may_differ_from_the_cursor_key(alpha):
    # seq_order_key's case: ids sort one project's entries exactly as seq does.
    rows = entries_of(alpha.project, 3)

    page = keyset_slice(rows, key="seq", limit=2, descending=True, order="pk")

    assert seqs(page.items) == [3, 2]
    assert page.next_cursor == 2


def test_values_rows_page_by_their_key(alpha):
    work = open_work(alpha.project)
    add_evidence(work, "inspection", "observed")
    rows = GovernanceRevision.objects.filter(work=work).values("revision")

    first = keyset_slice(rows, key="revision", limit=1, after=-1)
    last = keyset_slice(rows, key="revision", limit=1, after=first.next_cursor)

    assert (first.items, first.next_cursor) == ([{"revision": 0}], 0)
    assert (last.items, last.next_cursor) == ([{"revision": 1}], None)


def test_one_query_reads_a_slice(alpha, django_assert_num_queries):
    rows = entries_of(alpha.project, 4)

    with django_assert_num_queries(1):
        keyset_slice(rows, key="seq", limit=2)


# --- keyset_page: the team pages, newest first -----------------------------------------------


def test_the_first_page_is_the_newest_with_only_an_older_link(alpha):
    page = keyset_page(entries_of(alpha.project, 5), "seq", before=None, after=None, size=2)

    assert seqs(page.items) == [5, 4]
    assert (page.newer, page.older) == (None, 4)


def test_the_oldest_page_links_only_newer(alpha):
    page = keyset_page(entries_of(alpha.project, 5), "seq", before=2, after=None, size=2)

    assert seqs(page.items) == [1]
    assert (page.newer, page.older) == (1, None)


def test_a_newer_page_shows_the_rows_nearest_its_cursor_newest_first(alpha):
    page = keyset_page(entries_of(alpha.project, 6), "seq", before=None, after=1, size=2)

    assert seqs(page.items) == [3, 2]
    assert (page.newer, page.older) == (3, 2)


def test_the_newest_page_reached_by_after_has_no_newer_link(alpha):
    page = keyset_page(entries_of(alpha.project, 3), "seq", before=None, after=1, size=2)

    assert seqs(page.items) == [3, 2]
    assert (page.newer, page.older) == (None, 2)


def test_an_empty_page_behind_a_cursor_still_links_back(alpha):
    rows = entries_of(alpha.project, 2)

    past_the_newest = keyset_page(rows, "seq", before=None, after=2, size=2)
    before_the_oldest = keyset_page(rows, "seq", before=1, after=None, size=2)

    assert (past_the_newest.items, past_the_newest.newer, past_the_newest.older) == ([], None, 3)
    assert (before_the_oldest.items, before_the_oldest.newer,
            before_the_oldest.older) == ([], 0, None)


def test_an_empty_listing_has_no_links(alpha):
    page = keyset_page(MemoryEntry.objects.for_project(alpha.project), "seq", None, None, 50)

    assert (page.items, page.newer, page.older) == ([], None, None)


@pytest.mark.parametrize("text", ["-1", "x", "1.5", "١", "9" * 19])
def test_a_malformed_page_cursor_names_no_page(text):
    with pytest.raises(Http404):
        cursor_value(text)


@pytest.mark.parametrize("text, value", [(None, None), ("", None), ("0", 0), ("42", 42)])
def test_a_page_cursor_is_absent_or_a_number(text, value):
    assert cursor_value(text) == value


# --- a bad cursor on every API listing: the contract's 400 ------------------------------------


@pytest.mark.parametrize("listing, cursor", [
    ("memory", {"after": "x"}),
    ("memory", {"after": "-1"}),
    ("memory", {"before": "0"}),
    ("memory/candidates", {"after": "-1"}),
    ("work", {"after": "w" * 129}),
    ("revisions", {"after": "-2"}),
])
def test_a_bad_api_cursor_is_a_validation_error_naming_it(alpha, client_for, listing, cursor):
    work = open_work(alpha.project)
    path = (f"/v1/projects/{alpha.id}/work/{work.work_id}/governance/revisions"
            if listing == "revisions" else f"/v1/projects/{alpha.id}/{listing}")

    response = client_for(alpha.token).get(path, cursor)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error"
    assert set(body["fields"]) == set(cursor)


# --- limit on every API listing: Ferryman's habits (contract section 9) ------------------------


def listing_path(alpha: Any, listing: str) -> str:
    if listing == "revisions":
        work = open_work(alpha.project)
        return f"/v1/projects/{alpha.id}/work/{work.work_id}/governance/revisions"
    return f"/v1/projects/{alpha.id}/{listing}"


@pytest.mark.parametrize("listing", ["memory", "memory/candidates", "work", "revisions"])
def test_limit_zero_is_an_empty_page_on_every_listing(alpha, client_for, listing):
    path = listing_path(alpha, listing)
    entries_of(alpha.project, 2)
    services.candidate_create(project=alpha.project, author="agent", category="note",
                              content="a proposal", source="agent")
    open_work(alpha.project)
    full = client_for(alpha.token).get(path).json()

    response = client_for(alpha.token).get(path, {"limit": 0})

    assert response.status_code == 200
    assert response.json() == {"items": [], "next_cursor": None}
    assert full["items"]  # the listing has items: the empty page is limit=0's doing


@pytest.mark.parametrize("listing", ["memory", "memory/candidates", "work", "revisions"])
@pytest.mark.parametrize("limit", ["x", "1.5", "-1", ""])
def test_a_limit_that_is_not_a_whole_number_is_refused_on_every_listing(
    alpha, client_for, listing, limit
):
    response = client_for(alpha.token).get(listing_path(alpha, listing), {"limit": limit})

    assert response.status_code == 400
    body = response.json()
    assert (body["code"], set(body["fields"])) == ("validation_error", {"limit"})


def test_a_limit_over_the_maximum_answers_a_full_page_of_five_hundred(alpha, client_for):
    entries_of(alpha.project, 501)
    client = client_for(alpha.token)

    over = client.get(f"/v1/projects/{alpha.id}/memory", {"limit": 1000})
    rest = client.get(f"/v1/projects/{alpha.id}/memory",
                      {"limit": 1000, "after": over.json()["next_cursor"]})

    assert over.status_code == 200
    assert [item["seq"] for item in over.json()["items"]] == list(range(1, 501))
    assert over.json()["next_cursor"] == 500
    assert [item["seq"] for item in rest.json()["items"]] == [501]
    assert rest.json()["next_cursor"] is None
