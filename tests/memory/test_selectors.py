"""memory.selectors: the reads the API, the team pages and the commands share."""

from __future__ import annotations

from datetime import timedelta

from memory import selectors, services
from memory.models import MemoryEntry


def add(project, content: str, **fields) -> MemoryEntry:
    return services.memory_entry_create(
        project=project, author="t", category=fields.pop("category", "note"), content=content,
        **fields,
    ).entry


def seqs(rows) -> list[int]:
    return sorted(row.seq for row in rows)


def test_with_no_filter_it_lists_every_entry_of_the_project_only(alpha, beta):
    add(alpha.project, "one")
    add(alpha.project, "two")
    add(beta.project, "elsewhere")

    assert seqs(selectors.entry_list(project=alpha.project)) == [1, 2]


def test_it_filters_by_category_and_source_together(alpha):
    add(alpha.project, "a", category="decision", source="cli")
    add(alpha.project, "b", category="decision", source="agent")
    add(alpha.project, "c", category="note", source="cli")

    rows = selectors.entry_list(project=alpha.project, category="decision", source="cli")

    assert seqs(rows) == [1]


def test_an_empty_filter_value_filters_nothing(alpha):
    add(alpha.project, "a", category="decision")
    add(alpha.project, "b", category="note")

    assert seqs(selectors.entry_list(project=alpha.project, category="", source="")) == [1, 2]


def test_since_keeps_entries_created_at_or_after_it(alpha):
    first = add(alpha.project, "early")
    second = add(alpha.project, "late")

    rows = selectors.entry_list(project=alpha.project, since=second.created_at)
    everything = selectors.entry_list(project=alpha.project,
                                      since=first.created_at - timedelta(seconds=1))

    assert seqs(rows) == [2]
    assert seqs(everything) == [1, 2]


def test_q_searches_every_word_in_this_project_only(alpha, beta):
    add(alpha.project, "the gateway times out")
    add(alpha.project, "the gateway is fine")
    add(alpha.project, "timeouts elsewhere")
    add(beta.project, "the gateway times out")

    assert seqs(selectors.entry_list(project=alpha.project, q="gateway times")) == [1]


def test_a_query_without_words_matches_nothing(alpha):
    add(alpha.project, "text")

    assert seqs(selectors.entry_list(project=alpha.project, q="!!!")) == []


def test_current_leaves_out_corrected_entries(alpha):
    add(alpha.project, "wrong")
    add(alpha.project, "right", corrects=1)
    add(alpha.project, "unrelated")

    assert seqs(selectors.entry_list(project=alpha.project, current=True)) == [2, 3]
    assert seqs(selectors.entry_list(project=alpha.project)) == [1, 2, 3]


def test_listed_entries_carry_their_links_without_a_query_each(alpha, django_assert_num_queries):
    original = add(alpha.project, "wrong")
    correction = add(alpha.project, "right", corrects=1)

    with django_assert_num_queries(2):  # the rows, then every row's corrections at once
        rows = {row.seq: row for row in selectors.entry_list(project=alpha.project)}
        links = {seq: ([r.uuid for r in row.corrected_by_rows], row.corrects_uuid)
                 for seq, row in rows.items()}

    assert links == {1: ([correction.uuid], None), 2: ([], original.uuid)}


def test_entry_get_finds_by_seq_or_uuid_in_its_project_only(alpha, beta):
    entry = add(alpha.project, "one")
    add(beta.project, "other")

    assert selectors.entry_get(project=alpha.project, ref=1).pk == entry.pk
    assert selectors.entry_get(project=alpha.project, ref="1").pk == entry.pk
    assert selectors.entry_get(project=alpha.project, ref=str(entry.uuid)).pk == entry.pk
    assert selectors.entry_get(project=beta.project, ref=str(entry.uuid)) is None
    assert selectors.entry_get(project=alpha.project, ref=2) is None
    assert selectors.entry_get(project=alpha.project, ref="not-a-ref") is None


def test_entry_get_loads_the_entries_that_correct_it(alpha):
    add(alpha.project, "wrong")
    correction = add(alpha.project, "right", corrects=1)

    entry = selectors.entry_get(project=alpha.project, ref=1)

    assert [row.uuid for row in entry.corrected_by_rows] == [correction.uuid]


def test_candidate_list_filters_by_status_within_the_project(alpha, beta):
    kept = services.candidate_create(project=alpha.project, author="t", category="note",
                                     content="keep")
    approved = services.candidate_create(project=alpha.project, author="t", category="note",
                                         content="approve")
    services.candidate_create(project=beta.project, author="t", category="note", content="x")
    entry = services.candidate_approve(project=alpha.project, candidate=approved, by="reviewer")

    pending = selectors.candidate_list(project=alpha.project, status="pending")
    done = list(selectors.candidate_list(project=alpha.project, status="approved"))

    assert [c.pk for c in pending] == [kept.pk]
    assert [c.pk for c in done] == [approved.pk]
    assert done[0].entry_uuid == entry.uuid
    assert selectors.candidate_list(project=alpha.project).count() == 2
