"""Search people can scan: a result count, the matched words marked, a date range, and
every filter kept as the reader pages on."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from memory import services, views
from memory.models import MemoryEntry
from memory.templatetags.gedweb_markdown import highlight, render_markdown
from tests.pages.conftest import login


@pytest.fixture
def vera(site):
    return login(site.member)


def seqs(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'class="seq" href="[^"]+">#(\d+)</a>', body)]


def written_days_ago(project, days: int, content: str) -> int:
    """An entry with an earlier created_at, as an import keeps a row's own time
    (entries are append-only: no test may move one's time afterwards)."""
    row = services.ImportRow(key=f"old-{days}-{content}", category="history", content=content,
                             source="import", created_at=datetime.now(UTC) - timedelta(days=days),
                             label=content)
    services.memory_entries_import(project=project, rows=[row])
    return MemoryEntry.objects.get(project=project, content=content).seq


def test_a_search_says_how_many_entries_match(site, vera):
    body = vera.get("/p/alpha/memory/?q=postgresql").content.decode()
    expected = len(seqs(body))
    assert expected >= 2
    assert f'<p class="count" role="status">{expected} entries match.</p>' in body
    one = vera.get("/p/alpha/memory/?q=elasticsearch+7").content.decode()
    assert '<p class="count" role="status">1 entry matches.</p>' in one
    none = vera.get("/p/alpha/memory/?q=zeppelin").content.decode()
    assert "0 entries match." in none and "No entries match." in none
    # The unfiltered timeline counts nothing.
    assert 'class="count"' not in vera.get("/p/alpha/memory/").content.decode()


def test_the_count_stops_at_its_cap(site, vera, monkeypatch):
    monkeypatch.setattr(views, "COUNT_CAP", 3)
    body = vera.get("/p/alpha/memory/?category=decision").content.decode()
    assert len(seqs(body)) > 3
    assert "More than 3 entries match." in body


def test_matched_words_are_marked_in_every_result(site, vera):
    body = vera.get("/p/alpha/memory/?q=postgresql").content.decode()
    rows = re.findall(r'<article class="entry.*?</article>', body, re.S)
    assert rows
    for row in rows:
        assert re.search(r"<mark>postgresql</mark>", row, re.I), row
    # Only the words of the query, not the rest.
    assert "<mark>Orders</mark>" not in body


def test_highlighting_never_touches_markup_or_entities():
    html = render_markdown('A & B use [postgres](https://example.org/postgres) "amp"')
    marked = str(highlight(html, "postgres amp"))
    assert 'href="https://example.org/postgres"' in marked  # the attribute is untouched
    assert "&amp;" in marked and "&<mark>" not in marked  # so is the entity
    assert "<mark>postgres</mark></a>" in marked and "<mark>amp</mark>" in marked


@pytest.mark.parametrize("query", ["<script>alert(1)</script>", '"><img src=x onerror=1>',
                                   "mark", "</mark>", "a"])
def test_a_hostile_query_is_text_and_marks_nothing_else(site, vera, query):
    services.memory_entry_create(project=site.alpha.project, author="t", category="note",
                                 content=f"literally {query} here")
    body = vera.get("/p/alpha/memory/", {"q": query}).content.decode()
    assert "<script>alert(1)</script>" not in body and "<img" not in body
    assert body.count("<mark>") == body.count("</mark>")
    assert str(highlight("plain <b>text</b>", "text")) == "plain <b>text</b>"  # not SafeString


def test_a_date_range_filters_by_day_both_ends_inclusive(site, vera):
    project = site.alpha.project
    ten = written_days_ago(project, 10, "ten days ago")
    five = written_days_ago(project, 5, "five days ago")
    today = datetime.now(UTC).date()

    def shown(query: str) -> list[int]:
        return seqs(vera.get(f"/p/alpha/memory/?category=history&{query}").content.decode())

    def day(n: int) -> str:
        return (today - timedelta(days=n)).isoformat()

    assert shown(f"since={day(10)}&until={day(10)}") == [ten]
    assert shown(f"since={day(5)}") == [five]
    assert shown(f"until={day(6)}") == [ten]
    assert shown(f"since={day(10)}&until={day(5)}") == [five, ten]
    assert shown(f"since={day(4)}") == []
    # Today's entries are in a range that ends today.
    everything = MemoryEntry.objects.filter(project=project).count()
    assert len(seqs(vera.get(f"/p/alpha/memory/?until={today}").content.decode())) == everything


@pytest.mark.parametrize(("query", "message"), [
    ("since=2026-13-45", "Since: Enter a valid date."),
    ("since=2026-12-02&until=2026-12-01", "“From” is after “To”: no day is in that range."),
])
def test_a_bad_date_is_a_clear_message_and_filters_nothing(site, vera, query, message):
    response = vera.get(f"/p/alpha/memory/?{query}")
    assert response.status_code == 200
    body = response.content.decode()
    assert message in body and "The dates are left out." in body
    assert seqs(body) == seqs(vera.get("/p/alpha/memory/").content.decode())


def test_every_filter_goes_on_with_the_pager(site, vera):
    project = site.alpha.project
    for i in range(60):
        services.memory_entry_create(project=project, author="t", category="bulk",
                                     source="loader", content=f"kestrel sighting {i}")
    since = datetime.now(UTC).date().isoformat()
    first = vera.get(f"/p/alpha/memory/?q=kestrel&category=bulk&source=loader&since={since}")
    body = first.content.decode()
    assert len(seqs(body)) == 50 and "60 entries match." in body
    link = re.search(r'rel="next" href="\?([^"]+)"', body).group(1).replace("&amp;", "&")
    assert {"category=bulk", "source=loader", "q=kestrel", f"since={since}"} <= set(
        link.split("&"))
    second = vera.get(f"/p/alpha/memory/?{link}").content.decode()
    assert len(seqs(second)) == 10 and "60 entries match." in second
    assert set(seqs(body)).isdisjoint(seqs(second))


@pytest.mark.parametrize("query", ["post postgres", "POSTGRES post"])
def test_the_longest_of_overlapping_words_is_marked_whole(query):
    # By length, not by alphabet: "post" sorts after "POSTGRES".
    assert str(highlight(render_markdown("postgres"), query)).strip() == (
        "<p><mark>postgres</mark></p>")


def test_one_letter_words_are_not_marked_two_letter_ones_are():
    marked = str(highlight(render_markdown("a go b"), "a go b")).strip()
    assert marked == "<p>a <mark>go</mark> b</p>"


def test_matching_ignores_case_and_keeps_the_texts_own():
    assert str(highlight(render_markdown("PostgreSQL"), "postgresql")).strip() == (
        "<p><mark>PostgreSQL</mark></p>")


def test_at_most_ten_words_are_marked_the_longest_ones():
    words = [chr(ord("a") + n) * (n + 2) for n in range(11)]  # "aa", "bbb", ... 12 letters
    marked = str(highlight(render_markdown(" ".join(words)), " ".join(words)))
    assert "<mark>aa</mark>" not in marked and " aa " not in marked  # the shortest is left
    assert marked.count("<mark>") == 10 and marked.startswith("<p>aa <mark>bbb</mark>")


def test_every_text_between_tags_is_marked():
    marked = str(highlight(render_markdown("ox *ox* **ox** ox"), "ox")).strip()
    assert marked == ("<p><mark>ox</mark> <em><mark>ox</mark></em> "
                      "<strong><mark>ox</mark></strong> <mark>ox</mark></p>")


@pytest.mark.parametrize("query", [None, "", "  ", "x"])
def test_a_query_without_a_word_of_two_letters_leaves_the_text_as_it_was(query):
    html = render_markdown("XXXX x")
    assert highlight(html, query) is html
