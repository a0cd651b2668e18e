"""What a team lead reads (issue 36 §6-7): activity charts, authors, the chain badge,
governance diffs, recall beside a candidate, standards decisions, the admin's corrections,
and the pages' one date format."""

from __future__ import annotations

import html
import re
from datetime import UTC, date, datetime, timedelta

import pytest
from django.core.management import CommandError, call_command

from memory import authors, selectors, services
from memory.models import ChainVerification, MemoryCandidate, MemoryEntry
from memory.templatetags.gedweb_pages import when
from tests.memory.test_commands import tamper
from tests.pages.conftest import login


@pytest.fixture
def vera(site):
    return login(site.member)


def seqs(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'class="seq" href="[^"]+">#(\d+)</a>', body)]


def chart_counts(body: str, chart_id: str) -> dict[str, int]:
    """Each series' total as the chart's bars draw it (the rects' data-count)."""
    start = body.index(f'id="{chart_id}"')
    figure = body[start:body.index("</figure>", start)]
    totals: dict[str, int] = {}
    for series, count in re.findall(r'data-series="([^"]*)" data-count="(\d+)"', figure):
        totals[series] = totals.get(series, 0) + int(count)
    return totals


def days_ago(n: int) -> datetime:
    return datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0) - timedelta(
        days=n)


def import_rows(project, author: str, rows: list[tuple[int, str]]) -> None:
    """Entries written n days ago (an import keeps its rows' times), by one author."""
    services.memory_entries_import(project=project, author=author, rows=[
        services.ImportRow(key=f"{author}-{n}-{i}", category=category, content=f"row {i}",
                           source="import", created_at=days_ago(n), label=str(i))
        for i, (n, category) in enumerate(rows)
    ])


# --- activity --------------------------------------------------------------------------


def test_activity_counts_each_day_by_category_and_author_within_90_days(site):
    project = site.alpha.project
    today = datetime.now(UTC).date()
    import_rows(project, "ged_import:shop", [(100, "note")])  # before the 90 days
    import_rows(project, "ged_import:shop", [(3, "note"), (3, "note"), (1, "decision")])
    import_rows(project, "ged_import:wiki", [(1, "note")])
    activity = selectors.entry_activity(project=project, today=today)
    assert len(activity.days) == 90 and activity.days[-1] == today
    three, one = today - timedelta(days=3), today - timedelta(days=1)
    assert (activity.by_category["note"].get(three), activity.by_category["note"].get(one)) == (
        2, 1)
    assert activity.by_category["decision"].get(one) == 1
    assert all(day >= activity.days[0] for per_day in activity.by_category.values()
               for day in per_day)
    assert activity.by_author["ged_import:shop"] == {three: 2, one: 1}  # not the 100-day one
    assert activity.by_author["ged_import:wiki"] == {one: 1}
    assert activity.by_author["agent-claude"] == {today: len(site.alpha.entries) + 3}


def test_the_overview_charts_draw_the_entries_numbers(site, vera):
    project = site.alpha.project
    import_rows(project, "ged_import:shop", [(5, "note"), (5, "todo"), (200, "todo")])
    body = vera.get("/p/alpha/").content.decode()
    since = datetime.combine(datetime.now(UTC).date() - timedelta(days=89), datetime.min.time(),
                             tzinfo=UTC)
    window = MemoryEntry.objects.filter(project=project, created_at__gte=since)
    by_category: dict[str, int] = {}
    for category in window.values_list("category", flat=True):
        by_category[category] = by_category.get(category, 0) + 1
    # Five categories or six are drawn apart; the 200-day-old todo is outside.
    assert chart_counts(body, "chart-category") == by_category
    assert chart_counts(body, "chart-author") == {
        "token “agent-claude”": window.filter(author="agent-claude").count(),
        "import of shop": 2,
    }
    # The legend links each author to their entries.
    assert '<a href="/p/alpha/memory/authors/ged_import:shop/">import of shop</a>' in body
    # The text alternative: a summary for screen readers and a table of the same numbers.
    assert f"{window.count()} in all" in body
    assert 'role="img" aria-label="Entries a day by category from' in body


def test_candidates_waiting_are_counted_each_day_until_decided(site, vera):
    project = site.alpha.project
    waiting = services.candidate_propose(project=project, author="agent-codex",
                                         category="note", content="Cache the catalogue.")
    decided = services.candidate_propose(project=project, author="agent-codex",
                                         category="note", content="Drop the old API.")
    services.candidate_reject(project=project, candidate=decided.candidate, by="user:olga")
    today = datetime.now(UTC).date()
    assert MemoryCandidate.objects.get(pk=waiting.candidate.pk).status == "pending"
    assert selectors.entry_activity(project=project, today=today).waiting == {today: 1}
    # Still pending three days on: it waits at the end of each of those days.
    later = selectors.entry_activity(project=project, today=today + timedelta(days=3))
    assert later.waiting == {today + timedelta(days=n): 1 for n in range(4)}
    assert later.waiting_now == 1
    body = vera.get("/p/alpha/").content.decode()
    assert chart_counts(body, "chart-waiting") == {"waiting": 1}
    assert "1 candidate waiting for review" in body


# --- authors ---------------------------------------------------------------------------


def test_authors_are_described_by_what_they_are():
    assert authors.describe("default").text == "token “default”"
    assert authors.describe("user:vera").text == "vera"
    assert authors.describe("admin").text == "the admin token"
    assert authors.describe("cli").text == "a manage.py command"
    assert authors.describe("ged_import:shop").text == "import of shop"
    assert authors.describe("ged_import:trusted-by:olga").kind == "person"


def test_the_timeline_links_each_author_to_their_entries(site, vera):
    project = site.alpha.project
    services.memory_entry_create(project=project, author="agent-codex", category="note",
                                 source="codex", content="Codex wrote this one.")
    body = vera.get("/p/alpha/memory/").content.decode()
    assert 'href="/p/alpha/memory/authors/agent-codex/"' in body
    assert ">token “agent-codex”</a>" in body and ">default<" not in body
    page = vera.get("/p/alpha/memory/authors/agent-codex/")
    assert page.status_code == 200
    only = list(MemoryEntry.objects.filter(project=project, author="agent-codex")
                .values_list("seq", flat=True))
    assert seqs(page.content.decode()) == only and len(only) == 1
    claude = vera.get("/p/alpha/memory/authors/agent-claude/").content.decode()
    assert sorted(seqs(claude)) == sorted(
        MemoryEntry.objects.filter(project=project, author="agent-claude")
        .values_list("seq", flat=True))
    assert '<dd id="author-count">' + str(len(seqs(claude))) + "</dd>" in claude


def test_an_author_with_no_entries_here_is_not_found(site, vera):
    assert vera.get("/p/alpha/memory/authors/agent-beta/").status_code == 404  # beta's
    assert vera.get("/p/alpha/memory/authors/nobody/").status_code == 404
    assert login(site.outsider).get("/p/alpha/memory/authors/agent-claude/").status_code == 404


# --- the chain badge -------------------------------------------------------------------


def badge(client) -> tuple[str, str]:
    body = client.get("/p/alpha/").content.decode()
    found = re.search(r'<span class="chain-status" id="chain-status" data-state="(\w+)">(.*?)'
                      r"</span>\s*</dd>", body, re.S)
    assert found, body
    return found.group(1), re.sub(r"<[^>]+>", "", found.group(2))


def test_the_chain_badge_tells_never_verified_then_verified_then_behind(site, vera):
    project = site.alpha.project
    assert badge(vera)[0] == "never"
    assert "no check on record" in badge(vera)[1]
    call_command("memory", "verify", "--project", "alpha", stdout=open("/dev/null", "w"))
    recorded = ChainVerification.objects.get(project=project)
    head = MemoryEntry.objects.filter(project=project).order_by("-seq")[0].seq
    assert (recorded.ok, recorded.entries) == (True, head)
    state, text = badge(vera)
    assert state == "verified"
    assert f"all {head} entries, checked {recorded.checked_at:%Y-%m-%d %H:%M} UTC" in text
    services.memory_entry_create(project=project, author="agent-claude", category="note",
                                 source="s", content="Written after the check.")
    state, text = badge(vera)
    assert state == "behind"
    assert f"{head} of {head + 1} entries held" in text and "the newest is not checked yet" in text


def test_the_chain_badge_tells_a_failed_check(site, vera):
    tamper("alpha", 2, "rewritten behind the triggers' back")
    with pytest.raises(CommandError):
        call_command("memory", "verify", "--project", "alpha", stdout=open("/dev/null", "w"))
    state, text = badge(vera)
    assert state == "failed"
    assert "at entry #2" in text
    # The API's GET /verify only reads: it records nothing.
    assert ChainVerification.objects.get(project_id="alpha").first_bad_seq == 2


# --- governance, review, standards -----------------------------------------------------


def test_a_governance_revision_shows_what_changed_since_the_one_before(site, vera):
    work = site.alpha.work
    base = f"/p/alpha/work/{work.work_id}/revisions/"
    first = vera.get(base + "1").content.decode()
    assert "The first revision" in first and 'class="diff"' not in first
    body = vera.get(base + "2").content.decode()
    added = [html.unescape(line) for line in
             re.findall(r'<tr class="insert">.*?<code>(.*?)</code>', body, re.S)]
    removed = [html.unescape(line) for line in
               re.findall(r'<tr class="delete">.*?<code>(.*?)</code>', body, re.S)]
    # Revision 2 appended the evidence: its lines come in, the empty list and number go.
    assert any('"summary": "Basket row locked with select_for_update' in line
               for line in added), added
    assert '  "evidence": [],' in removed and '  "revision": 1,' in removed, removed
    assert '  "revision": 2,' in added
    # Unchanged lines are not marked (the work's summary is in both).
    assert not any("Fix coupon stacking race" in line for line in added + removed)
    assert "compared with itself" in vera.get(base + "2?from=2").content.decode()
    assert vera.get(base + "2?from=99").status_code == 404
    assert vera.get(base + "2?from=x").status_code == 404


def test_a_pending_candidate_stands_beside_the_entries_most_like_it(site):
    project = site.alpha.project
    services.candidate_propose(project=project, author="agent-codex", category="decision",
                               content="Search runs on PostgreSQL full-text search.")
    body = login(site.operator).get("/p/alpha/review/").content.decode()
    similar = body[body.index('class="similar"'):]
    similar = similar[:similar.index("</section>")]
    linked = [int(n) for n in re.findall(r'/memory/(\d+)">#\d+</a>', similar)]
    # The current entry about PostgreSQL search is among them; the corrected ones are not.
    assert site.alpha.second_correction.seq in linked
    assert site.alpha.original.seq not in linked
    assert 1 <= len(linked) <= 3


def test_the_standards_page_lists_each_decision(site, vera):
    from governance.models import StandardsImport

    rejected = site.alpha.extra["claude"]
    rejected.reject(by="user:otto", sha256=rejected.sha256)
    body = vera.get("/p/alpha/standards/").content.decode()
    section = body[body.index("<h2>Decisions"):body.index("<h2>Every import")]
    decided = re.findall(r'<span class="badge \w+">(\w+)</span> <code>([^<]+)</code>', section)
    assert decided == [("rejected", "CLAUDE.md"), ("accepted", "AGENTS.md")]
    assert ">olga<" in section and ">otto<" in section
    pending = StandardsImport.objects.filter(project_id="alpha", decision__isnull=True).count()
    assert f"{pending} import wait" in section or f"{pending} imports wait" in section


# --- the admin, dates -------------------------------------------------------------------


def test_the_admins_entry_page_shows_its_corrections(site):
    client = login(site.root)
    middle = site.alpha.correction
    body = client.get(f"/admin/memory/memoryentry/{middle.pk}/change/").content.decode()
    original = (f'/admin/memory/memoryentry/{site.alpha.original.pk}/change/">'
                f"#{site.alpha.original.seq}</a>")
    later = (f'/admin/memory/memoryentry/{site.alpha.second_correction.pk}/change/">'
             f"#{site.alpha.second_correction.seq}</a>")
    assert original in body and later in body
    plain = client.get(f"/admin/memory/memoryentry/{site.alpha.entries[0].pk}/change/")
    text = plain.content.decode()
    assert "nothing: this entry is not a correction" in text
    assert "nothing: no later entry corrects this one" in text


def test_every_date_has_one_format():
    instant = datetime(2026, 12, 7, 20, 57, 31, 5, tzinfo=UTC)
    assert when(instant) == ('<time datetime="2026-12-07T20:57:31.000005Z">'
                             "2026-12-07 20:57 UTC</time>")
    # The services' ISO text (governance documents) reads the same, any offset to UTC.
    assert when("2026-12-07T21:57:31+01:00") == ('<time datetime="2026-12-07T20:57:31Z">'
                                                "2026-12-07 20:57 UTC</time>")
    assert when(date(2026, 12, 7)) == '<time datetime="2026-12-07">2026-12-07</time>'
    assert when("not a date") == "not a date" and when(None) == ""


def test_the_pages_show_no_other_date_format(site, vera):
    from tests.pages.conftest import project_urls

    for url in project_urls(site.alpha):
        response = vera.get(url)
        if not response["Content-Type"].startswith("text/html"):
            continue
        body = response.content.decode()
        times = re.findall(r"<time datetime=\"[^\"]+\">([^<]+)</time>", body)
        assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", t) for t in times), (url, times)
