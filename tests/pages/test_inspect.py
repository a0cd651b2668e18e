"""Compare and inspect: document diffs, the delivered context bundles, STANDARDS.md."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection

from gedweb.lib.textdiff import MAX_LINES
from governance.context import context_deliver, delivered_bundle
from governance.models import ContextBundle, ContextDelivery
from memory.documents import document_put
from tests.django_fixtures import bearer_client
from tests.pages.conftest import login

pytestmark = pytest.mark.django_db
ADR = "adr/0001-orders-on-postgresql.md"


# --- compare ------------------------------------------------------------------------------


def test_the_document_page_offers_two_revisions_to_compare(site):
    body = login(site.member).get(f"/p/alpha/documents/{ADR}").content.decode()
    assert f'action="/p/alpha/compare/{ADR}"' in body
    assert '<option value="1" selected>' in body and '<option value="2" selected>' in body


def test_the_diff_shows_the_changed_line_removed_then_added(site):
    body = login(site.member).get(f"/p/alpha/compare/{ADR}?from=1&to=2").content.decode()
    assert "+1</span> <span class=\"diff-count removed\">−1</span> lines" in body
    removed = body.index('<tr class="delete">')
    added = body.index('<tr class="insert">')
    assert removed < added
    assert "reporting reads a replica.</code>" in body[removed:added]
    assert "5-minute lag budget.</code>" in body[added:]
    assert "Name the replica lag budget." in body  # the newer revision's reason
    # Without parameters: the newest revision against the one before.
    default = login(site.member).get(f"/p/alpha/compare/{ADR}").content.decode()
    assert "revision 1 → 2" in default


def test_the_diff_escapes_agent_text(site):
    project = site.alpha.project
    first = "# X\n\nFirst.\n"
    document_put(project=project, path="adr/0050-x.md", author="mallory", content=first)
    document_put(project=project, path="adr/0050-x.md", author="mallory", expected_revision=1,
                 content=first + "<script>window.__xss=1</script>\n<img src=x onerror=alert(1)>\n")
    body = login(site.member).get("/p/alpha/compare/adr/0050-x.md?from=1&to=2").content.decode()
    assert "<script>window" not in body and "<img" not in body
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in body


def test_a_revision_compared_with_itself_says_so(site):
    body = login(site.member).get(f"/p/alpha/compare/{ADR}?from=2&to=2").content.decode()
    assert "Revision 2 compared with itself: choose two different revisions." in body
    assert '<table class="diff">' not in body
    # A document with a single revision: the default pair is that revision twice.
    single = login(site.member).get("/p/alpha/compare/PROJECT.md").content.decode()
    assert "Revision 1 compared with itself" in single


@pytest.mark.parametrize("query", ["from=9&to=2", "from=1&to=3", "from=0&to=2", "from=x&to=2",
                                   "from=-1&to=2", "from=1&to=" + "9" * 30])
def test_bad_revision_numbers_are_404(site, query):
    assert login(site.member).get(f"/p/alpha/compare/{ADR}?{query}").status_code == 404


def test_missing_and_malformed_documents_are_404(site):
    client = login(site.member)
    assert client.get("/p/alpha/compare/adr/0999-none.md").status_code == 404
    assert client.get("/p/alpha/compare/not-a-document.txt").status_code == 404
    assert login(site.outsider).get(f"/p/alpha/compare/{ADR}?from=1&to=2").status_code == 404


def test_huge_revisions_are_refused_with_a_message(site):
    project = site.alpha.project
    lines = MAX_LINES + 10
    document_put(project=project, path="adr/0060-huge.md", author="agent",
                 content="# Huge\n" + "x\n" * lines)
    document_put(project=project, path="adr/0060-huge.md", author="agent", expected_revision=1,
                 content="# Huge\n" + "y\n" * lines)
    response = login(site.member).get("/p/alpha/compare/adr/0060-huge.md?from=1&to=2")
    body = response.content.decode()
    assert response.status_code == 200
    assert f"too long to compare on a page (at most {MAX_LINES:,} lines" in body


def test_hostile_revisions_under_the_limit_compare_quickly(site):
    """5,000 interleaved lines take difflib alone 9 s; the page stays under a few."""

    project = site.alpha.project
    old = [f"line {n}" for n in range(5_000)]
    new = old[1::2] + old[0::2]
    document_put(project=project, path="adr/0061-shuffled.md", author="agent",
                 content="\n".join(old) + "\n")
    document_put(project=project, path="adr/0061-shuffled.md", author="agent",
                 expected_revision=1, content="\n".join(new) + "\n")
    # How long it takes is bench/bounded_inputs.py's (`make bench`); a hang
    # fails on the suite's timeout.
    response = login(site.member).get("/p/alpha/compare/adr/0061-shuffled.md?from=1&to=2")
    assert response.status_code == 200
    page = response.content.decode()
    assert "line 4999" in page and "line 0" in page


# --- the delivered bundle ------------------------------------------------------------------


def _deliveries(site: Any) -> list[ContextDelivery]:
    return list(ContextDelivery.objects.filter(project=site.alpha.project).order_by("id"))


def test_the_context_log_links_every_delivery_to_its_bundle(site):
    body = login(site.member).get("/p/alpha/context/").content.decode()
    for delivery in _deliveries(site):
        assert f'href="/p/alpha/context/{delivery.pk}"' in body


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_the_bundle_page_gives_back_the_bytes_the_api_sent(site, output_format):
    project = site.alpha.project
    token_client = bearer_client(site.alpha_token)
    query = f"format={output_format}&work_id={site.alpha.work.work_id}"
    sent = token_client.get(f"/v1/projects/alpha/context?{query}")
    assert sent.status_code == 200
    delivery = ContextDelivery.objects.filter(project=project).order_by("-id").first()
    assert delivery.format == output_format
    raw = login(site.member).get(f"/p/alpha/context/{delivery.pk}/bundle")
    assert raw.status_code == 200
    assert raw.content == sent.content  # byte for byte
    assert raw["X-Context-Sha256"] == delivery.sha256
    page = login(site.member).get(f"/p/alpha/context/{delivery.pk}").content.decode()
    assert "Ged Runtime Data Trust Boundary" in page
    assert f'href="/p/alpha/context/{delivery.pk}/bundle"' in page
    if output_format == "json":
        assert json.loads(raw.content)["sha256"] == delivery.sha256


def test_a_bundle_delivered_again_is_stored_once(site):
    project = site.alpha.project
    before = ContextBundle.objects.filter(project=project).count()
    for _ in range(3):
        context_deliver(project=project, work=None, author="agent", output_format="text")
    deliveries = _deliveries(site)
    assert ContextBundle.objects.filter(project=project).count() == before
    same = [d for d in deliveries if d.sha256 == deliveries[-1].sha256]
    assert len(same) >= 4  # the seed's own text delivery had the same bytes
    for delivery in same:
        assert delivered_bundle(delivery).sha256 == delivery.sha256


def test_a_delivery_whose_bundle_is_not_stored_says_so(site):
    """Deliveries logged before governance 0008 have no stored bundle."""
    project = site.alpha.project
    delivery = ContextDelivery.objects.create(
        project=project, work=None, author="old-agent", format="text", sha256="0" * 64,
        size=10, created_at=_deliveries(site)[0].created_at)
    page = login(site.member).get(f"/p/alpha/context/{delivery.pk}")
    assert page.status_code == 200
    assert "The bundle of this delivery is not stored" in page.content.decode()
    assert login(site.member).get(f"/p/alpha/context/{delivery.pk}/bundle").status_code == 404


def test_a_stored_bundle_whose_text_no_longer_matches_is_not_given_out(site):
    delivery = _deliveries(site)[0]
    table = ContextBundle._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"DROP TRIGGER {table}_refuse_update")
        else:
            # ALTER TABLE refuses to run while deferred FK checks are queued.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        cursor.execute(f"UPDATE {table} SET text = 'tampered' WHERE sha256 = %s",
                       [delivery.sha256])
    assert delivered_bundle(delivery) is None
    assert login(site.member).get(f"/p/alpha/context/{delivery.pk}/bundle").status_code == 404


def test_another_projects_delivery_is_404_under_my_project(site):
    theirs = ContextDelivery.objects.filter(project=site.beta.project).first()
    client = login(site.member)
    assert client.get(f"/p/alpha/context/{theirs.pk}").status_code == 404
    assert client.get(f"/p/alpha/context/{theirs.pk}/bundle").status_code == 404
    assert client.get("/p/alpha/context/999999").status_code == 404
    assert login(site.outsider).get(f"/p/alpha/context/{_deliveries(site)[0].pk}"
                                    ).status_code == 404


def test_context_bundles_are_append_only(site):
    from gedweb.append_only import AppendOnlyError

    row = ContextBundle.objects.first()
    with pytest.raises(AppendOnlyError):
        row.save()
    with pytest.raises(AppendOnlyError):
        ContextBundle.objects.all().delete()


# --- STANDARDS.md --------------------------------------------------------------------------


def test_the_standards_page_links_the_served_file_with_its_hash(site):
    body = login(site.member).get("/p/alpha/standards/").content.decode()
    assert 'href="/p/alpha/STANDARDS.md"' in body
    served = bearer_client(site.alpha_token).get("/v1/projects/alpha/standards")
    assert served["X-Standards-Hash"] in body
    page = login(site.member).get("/p/alpha/STANDARDS.md")
    assert page.content == served.content
    assert page["X-Standards-Hash"] == served["X-Standards-Hash"]


def test_standards_md_is_404_while_nothing_is_accepted(site, make_project):
    from memory.models import Membership

    make_project("gamma")
    Membership.objects.create(user=site.member, project_id="gamma")
    assert login(site.member).get("/p/gamma/STANDARDS.md").status_code == 404
    assert "nothing accepted yet" in login(site.member).get("/p/gamma/standards/").content.decode()


def test_a_delivery_to_a_hook_shows_its_session(site):
    """`gedweb hook` names the agent's session (GET /context?session=)."""
    sent = bearer_client(site.alpha_token).get("/v1/projects/alpha/context?session=abc-123")
    assert sent.status_code == 200
    delivery = _deliveries(site)[-1]
    page = login(site.member).get(f"/p/alpha/context/{delivery.pk}").content.decode()
    assert '<dd id="session"><code>abc-123</code></dd>' in page
    other = _deliveries(site)[0]
    other_page = login(site.member).get(f"/p/alpha/context/{other.pk}").content.decode()
    assert 'id="session"' not in other_page
