"""governance.selectors: the reads the API and the team pages share."""

from __future__ import annotations

import json

from django.utils import timezone

from governance import selectors
from governance.models import ContextDelivery
from tests.governance.support import PLANNED, add_evidence, open_work


def test_work_list_holds_the_project_s_work_only(alpha, beta):
    mine = open_work(alpha.project)
    open_work(beta.project)

    assert [w.pk for w in selectors.work_list(project=alpha.project)] == [mine.pk]


def test_work_list_with_state_carries_the_newest_revision(alpha):
    work = open_work(alpha.project)
    add_evidence(work, "inspection", "observed")

    row = selectors.work_list(project=alpha.project, with_state=True).get()

    assert json.loads(row.current_json)["revision"] == 1


def test_revision_summaries_are_the_summary_fields_of_that_work_only(alpha):
    work = open_work(alpha.project)
    other = open_work(alpha.project, PLANNED)
    add_evidence(work, "inspection", "observed")

    rows = list(selectors.revision_summaries(work=work).order_by("revision"))

    assert [row["revision"] for row in rows] == [0, 1]
    assert set(rows[0]) == set(selectors.REVISION_SUMMARY_FIELDS)
    assert rows[1]["evidence_count"] == 1
    assert [r["revision"] for r in selectors.revision_summaries(work=other)] == [0]


def test_context_delivery_list_holds_the_project_s_deliveries_with_their_work(
    alpha, beta, django_assert_num_queries,
):
    work = open_work(alpha.project)
    for project, delivered in ((alpha.project, work), (beta.project, None)):
        ContextDelivery.objects.create(project=project, work=delivered, author="seed",
                                       format="text", sha256="a" * 64, size=10,
                                       created_at=timezone.now())

    with django_assert_num_queries(1):
        rows = list(selectors.context_delivery_list(project=alpha.project))
        work_ids = [row.work.work_id for row in rows]

    assert work_ids == [work.work_id]
