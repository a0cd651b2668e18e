"""`manage.py work list`: the project's work items through the shared selector."""

from __future__ import annotations

import json
from io import StringIO

from django.core.management import call_command

from gedweb.lib.governance import format_time
from tests.governance.support import PLANNED, open_work


def test_work_list_prints_the_project_s_work_in_work_id_order(alpha, beta):
    first = open_work(alpha.project)
    second = open_work(alpha.project, PLANNED)
    open_work(beta.project)
    out = StringIO()

    call_command("work", "list", "--project", "alpha", stdout=out, stderr=StringIO())

    listed = json.loads(out.getvalue())["items"]
    assert [item["work_id"] for item in listed] == sorted([first.work_id, second.work_id])
    by_id = {item["work_id"]: item for item in listed}
    assert by_id[first.work_id] == {
        "work_id": first.work_id, "summary": first.summary, "mode": first.mode,
        "created_at": format_time(first.created_at),
    }
