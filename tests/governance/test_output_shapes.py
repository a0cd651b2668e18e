"""Governance listings answer through their output serializers, in GedPi's time form."""

from __future__ import annotations

from gedweb.lib.governance import format_time
from governance.models import GovernanceRevision
from tests.governance.support import add_evidence, gov_url, work_url


def test_a_listed_work_item_is_its_stored_row(api, alpha, direct_work):
    body = api.get(work_url("alpha")).json()

    assert body == {"items": [{
        "work_id": direct_work.work_id, "summary": direct_work.summary,
        "mode": direct_work.mode, "created_at": format_time(direct_work.created_at),
        "author": direct_work.author,
    }], "next_cursor": None}


def test_a_listed_revision_is_its_stored_row(api, alpha, direct_work):
    add_evidence(direct_work, "inspection", "observed")
    stored = GovernanceRevision.objects.filter(work=direct_work).order_by("revision")

    body = api.get(gov_url("alpha", direct_work.work_id, "revisions"), {"limit": 1}).json()

    first = stored[0]
    assert body == {"items": [{
        "revision": first.revision, "operation": first.operation, "author": first.author,
        "created_at": format_time(first.created_at), "evidence_count": first.evidence_count,
    }], "next_cursor": first.revision}
    assert stored.count() == 2
