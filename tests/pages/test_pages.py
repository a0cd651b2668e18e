"""What each team page shows: timeline, search, pagination, corrections, documents,
work, standards, skills, context deliveries and the mirror."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory import services
from memory.models import Membership
from tests.pages.conftest import login


@pytest.fixture
def vera(site):
    return login(site.member)


def seqs(body: str) -> list[int]:
    return [int(n) for n in re.findall(r'class="seq" href="[^"]+">#(\d+)</a>', body)]


def test_the_overview_shows_both_apps_with_their_links(site, vera):
    # The site's page (gedweb/pages.py): memory's counts beside governance's.
    from governance.models import WorkItem
    from memory.models import DocumentRevision, MemoryEntry

    body = vera.get("/p/alpha/").content.decode()
    entries = MemoryEntry.objects.filter(project_id="alpha").count()
    documents = DocumentRevision.objects.filter(project_id="alpha").values("path").distinct()
    work = WorkItem.objects.filter(project_id="alpha").count()
    assert work > 0 and entries > 0
    assert f"<dt>Memory entries</dt><dd>{entries} (newest" in body
    assert (f'<dt>Documents</dt><dd><a href="/p/alpha/documents/">{documents.count()}</a></dd>'
            in body)
    assert f'<dt>Work items</dt><dd><a href="/p/alpha/work/">{work}</a></dd>' in body
    assert '<a href="/p/alpha/" aria-current="page">Overview</a>' in body
    assert '<a href="/p/alpha/work/">Work</a>' in body


def test_the_overview_renders_project_md(site, vera):
    body = vera.get("/p/alpha/").content.decode()
    # PROJECT.md sits under the page's h1 and its own h2: its "#" is an h3.
    assert "<h3>Web shop</h3>" in body and "<h1>Web shop</h1>" not in body
    assert "<td>integer cents, never floats</td>" in body
    assert 'href="https://example.org/runbook" rel="noopener noreferrer nofollow"' in body


def test_the_timeline_shows_newest_first(site, vera):
    shown = seqs(vera.get("/p/alpha/memory/").content.decode())
    assert shown == sorted(shown, reverse=True)
    assert shown[0] == site.alpha.second_correction.seq


def test_the_timeline_filters_by_category_and_source(site, vera):
    shown = seqs(vera.get("/p/alpha/memory/?category=finding").content.decode())
    assert shown == [7, 3]
    shown = seqs(vera.get("/p/alpha/memory/?category=decision&source=architect").content.decode())
    assert shown == [11, 10, 9, 5, 1]
    assert seqs(vera.get("/p/alpha/memory/?source=nobody").content.decode()) == []


def test_an_impossible_filter_value_is_ignored_not_an_error(site, vera):
    response = vera.get("/p/alpha/memory/?category=" + "x" * 500)
    assert response.status_code == 200


def test_search_finds_words_through_the_full_text_index(site, vera):
    body = vera.get("/p/alpha/memory/?q=PostgreSQL").content.decode()
    assert seqs(body) == [11, 10, 1]
    assert "Search results for" in body


def test_search_combines_with_filters(site, vera):
    body = vera.get("/p/alpha/memory/?q=coupons&category=finding").content.decode()
    assert seqs(body) == [3]


def test_a_malformed_cursor_is_404(site, vera):
    assert vera.get("/p/alpha/memory/?before=abc").status_code == 404
    assert vera.get("/p/alpha/memory/?after=-1").status_code == 404


def test_pagination_walks_older_and_back_newer_by_seq_cursor(site, vera):
    project = site.alpha.project
    for i in range(120):
        services.memory_entry_create(project=project, author="t", category="bulk",
                                     content=f"bulk entry {i}")
    first = vera.get("/p/alpha/memory/?category=bulk").content.decode()
    page1 = seqs(first)
    assert len(page1) == 50 and page1[0] == 131
    older = re.search(r'href="\?category=bulk&amp;before=(\d+)"', first)
    assert older and "after=" not in first  # the newest page has no newer link
    second = vera.get(f"/p/alpha/memory/?category=bulk&before={older.group(1)}").content.decode()
    page2 = seqs(second)
    assert page2 == list(range(page1[-1] - 1, page1[-1] - 51, -1))
    newer = re.search(r'href="\?category=bulk&amp;after=(\d+)"', second)
    back = vera.get(f"/p/alpha/memory/?category=bulk&after={newer.group(1)}").content.decode()
    assert seqs(back) == page1
    last_link = re.search(r'before=(\d+)"', second).group(1)
    third = seqs(vera.get(f"/p/alpha/memory/?category=bulk&before={last_link}").content.decode())
    assert len(third) == 20 and third[-1] == 12
    assert len(set(page1 + page2 + third)) == 120


def test_the_timeline_costs_the_same_queries_for_2_and_20_entries(make_project,
                                                                  django_user_model):
    user = django_user_model.objects.create_user("q", password="pw-correct-horse-battery")
    counts = []
    for n, project_id in ((2, "small"), (20, "large")):
        project = make_project(project_id).project
        Membership.objects.create(user=user, project=project)
        first = None
        for i in range(n):
            entry = services.memory_entry_create(
                project=project, author="t", category=f"c{i % 3}", source=f"s{i % 2}",
                content=f"entry {i} kestrel", corrects=first.seq if first and i % 3 == 0 else None,
            ).entry
            first = first or entry
        client = login(user)
        client.get(f"/p/{project_id}/memory/")  # session and caches warm
        with CaptureQueriesContext(connection) as queries:
            assert client.get(f"/p/{project_id}/memory/?q=kestrel").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


def test_an_entry_shows_its_correction_chain_in_both_directions(site, vera):
    alpha = site.alpha
    body = vera.get(f"/p/alpha/memory/{alpha.correction.seq}").content.decode()
    chain = body[body.index('<ol class="chain">'):]
    assert f'href="/p/alpha/memory/{alpha.original.seq}"' in chain
    assert f'href="/p/alpha/memory/{alpha.second_correction.seq}"' in chain
    assert chain.index(f">#{alpha.original.seq}<") < chain.index(f"#{alpha.correction.seq}")
    assert chain.index(f"#{alpha.correction.seq}") < chain.index(
        f">#{alpha.second_correction.seq}<")
    assert "corrected</span>" in body


def test_the_original_entry_lists_every_later_correction(site, vera):
    alpha = site.alpha
    body = vera.get(f"/p/alpha/memory/{alpha.original.uuid}").content.decode()
    assert f'href="/p/alpha/memory/{alpha.correction.seq}"' in body
    assert f'href="/p/alpha/memory/{alpha.second_correction.seq}"' in body


def test_an_uncorrected_entry_says_it_is_current(site, vera):
    body = vera.get("/p/alpha/memory/2").content.decode()
    assert "badge ok\">current" in body
    assert "corrects nothing and nothing corrects it" in body


def test_the_timeline_marks_corrected_entries(site, vera):
    body = vera.get("/p/alpha/memory/").content.decode()
    assert f'corrected by <a href="/p/alpha/memory/{site.alpha.correction.seq}">' in body


def test_an_unknown_entry_is_404(site, vera):
    assert vera.get("/p/alpha/memory/9999").status_code == 404
    assert vera.get("/p/alpha/memory/not-a-ref").status_code == 404


def test_the_mirror_page_renders_memory_md(site, vera):
    body = vera.get("/p/alpha/mirror/").content.decode()
    assert "<h2>Project memory: alpha</h2>" in body  # below the page's own h1
    assert "<h3>1 · " in body
    assert "<code>Orders stay on **PostgreSQL 16**" in body  # fenced: shown, not interpreted


def test_the_mirror_text_is_the_api_mirror(site, vera, client_for):
    page = b"".join(vera.get("/p/alpha/MEMORY.md").streaming_content)
    api = client_for(None)
    from tests.django_fixtures import ADMIN_TOKEN

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {ADMIN_TOKEN}")
    assert page == b"".join(api.get("/v1/projects/alpha/memory.md").streaming_content)


def test_the_mirror_pages_by_seq_range(site, vera):
    for i in range(150):
        services.memory_entry_create(project=site.alpha.project, author="t", category="bulk",
                                     content=f"bulk {i}")
    first = vera.get("/p/alpha/mirror/").content.decode()
    assert "?after=100" in first and "<h3>101 · " not in first
    second = vera.get("/p/alpha/mirror/?after=100").content.decode()
    assert "<h3>101 · " in second and "<h3>100 · " not in second and "?after=0" in second


def test_documents_are_grouped_with_their_current_revision(site, vera):
    body = vera.get("/p/alpha/documents/").content.decode()
    for path in ("PROJECT.md", "CONTEXT.md", "adr/0001-orders-on-postgresql.md",
                 "reports/2026-11-load-test.md"):
        assert f'href="/p/alpha/documents/{path}"' in body
    assert "Architecture decisions (ADRs)" in body


def test_a_document_shows_its_history_and_older_revisions(site, vera):
    url = "/p/alpha/documents/adr/0001-orders-on-postgresql.md"
    current = vera.get(url).content.decode()
    assert "5-minute lag budget" in current
    assert "Name the replica lag budget." in current
    assert 'href="?revision=1"' in current and 'href="?revision=2"' in current
    old = vera.get(url + "?revision=1").content.decode()
    assert "5-minute lag budget" not in old and "older revision" in old
    assert vera.get(url + "?revision=3").status_code == 404


def test_documents_outside_the_fixed_paths_or_missing_are_404(site, vera):
    assert vera.get("/p/alpha/documents/../etc/passwd").status_code == 404
    assert vera.get("/p/alpha/documents/adr/9999-none.md").status_code == 404


def test_the_work_list_shows_lifecycle_mode_and_slice(site, vera):
    body = vera.get("/p/alpha/work/").content.decode()
    assert "Fix coupon stacking race in checkout" in body
    assert "Lock the basket row while validating coupons" in body
    assert "planned-change" in body and "direct-change" in body


def test_a_work_item_shows_guard_state_history_and_evidence(site, vera):
    work = site.alpha.work
    body = vera.get(f"/p/alpha/work/{work.work_id}/").content.decode()
    assert "<code>metadata-mutation</code>" in body
    assert 'badge ok">allowed' in body  # metadata mutation on active direct work
    assert "no satisfied verification evidence" in body  # commit is blocked
    for number in (0, 1, 2):
        assert f'/p/alpha/work/{work.work_id}/revisions/{number}"' in body
    assert "Basket row locked with select_for_update" in body
    assert "DIRECT.md" in body


def test_a_governance_revision_shows_the_whole_document_then(site, vera):
    work = site.alpha.work
    body = vera.get(f"/p/alpha/work/{work.work_id}/revisions/0").content.decode()
    assert "&quot;currentSlice&quot;: null" in body
    assert vera.get(f"/p/alpha/work/{work.work_id}/revisions/99").status_code == 404


def test_standards_show_approval_state_and_pending_renewals(site, vera):
    body = vera.get("/p/alpha/standards/").content.decode()
    assert "Pending renewals" in body
    assert "renewal-pending" in body
    assert "CLAUDE.md" in body and 'badge warn">pending' in body
    assert 'badge ok">accepted' in body


def test_a_standards_import_shows_its_exact_bytes(site, vera):
    row = site.alpha.extra["renewal"]
    body = vera.get(f"/p/alpha/standards/{row.public_id}").content.decode()
    assert "Run `make test` and `make lint` before every commit." in body
    assert row.sha256 in body


def test_skills_show_provenance_state(site, vera):
    body = vera.get("/p/alpha/skills/").content.decode()
    assert 'badge ok">verified' in body and 'badge warn">unverified' in body
    assert "legacy-unverified" in body
    detail = vera.get("/p/alpha/skills/old-release").content.decode()
    assert "does not match" in detail
    assert vera.get("/p/alpha/skills/nope").status_code == 404


def test_the_context_log_lists_every_delivery(site, vera):
    body = vera.get("/p/alpha/context/").content.decode()
    assert "agent-codex" in body and "agent-claude" in body
    assert f'href="/p/alpha/work/{site.alpha.work.work_id}/"' in body


def test_facets_list_each_distinct_category_and_source_in_order(site):
    from memory.models import MemoryEntry

    alpha = site.alpha.project
    for field in ("category", "source"):
        expected = sorted(set(MemoryEntry.objects.for_project(alpha).values_list(field,
                                                                               flat=True)))
        assert MemoryEntry.objects.distinct_values(alpha, field) == expected
    with pytest.raises(ValueError):
        MemoryEntry.objects.distinct_values(alpha, "content")
