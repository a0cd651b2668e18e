"""Standards imports are named by a random public id, never the sequential pk (issue 34 §6).

The pk is shared by every project, so a project that saw its own imports' ids
could count everyone else's imports between two of its own.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from gedweb.lib.ids import STANDARDS_IMPORT_ID_RE
from governance import ledger
from governance.models import StandardsImport

BEFORE = ("governance", "0011_contextdelivery_session")
AFTER = ("governance", "0013_standardsimport_public_id")


def imports_url(project_id: str, *rest: object) -> str:
    return "/".join([f"/v1/projects/{project_id}/standards/imports", *map(str, rest)])


def submit(client, project_id: str, content: str) -> dict:
    response = client.post(imports_url(project_id), {"path": "AGENTS.md", "content": content},
                           format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_ids_reveal_nothing_of_other_projects(alpha, beta, client_for):
    a, b = client_for(alpha.token), client_for(beta.token)
    first = submit(a, alpha.id, "# One\n")
    for number in range(3):  # another project's activity in between
        submit(b, beta.id, f"# Beta {number}\n")
    second = submit(a, alpha.id, "# Two\n")

    for body in (first, second):
        assert STANDARDS_IMPORT_ID_RE.fullmatch(body["id"]), body["id"]
        assert StandardsImport.objects.filter(public_id=body["id"], project_id=alpha.id).exists()
    assert first["id"] != second["id"]
    # The public id is the only name: the pk is no route, another project's id is 404.
    assert a.get(imports_url(alpha.id, first["id"])).json()["id"] == first["id"]
    pk = StandardsImport.objects.get(public_id=first["id"]).pk
    assert a.get(imports_url(alpha.id, pk)).status_code == 404
    theirs = StandardsImport.objects.filter(project_id=beta.id).first().public_id
    assert a.get(imports_url(alpha.id, theirs)).json() == {"code": "not_found",
                                                           "message": "not found"}
    listed = a.get(imports_url(alpha.id)).json()["items"]
    assert [item["id"] for item in listed] == [first["id"], second["id"]]


def test_the_migration_gives_existing_rows_ids_and_keeps_them_append_only(live_db, alpha,
                                                                         client_for):
    created = submit(client_for(alpha.token), alpha.id, "# Rules\n")
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    executor.loader.build_graph()
    executor.migrate([AFTER])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    row = StandardsImport.objects.get()
    assert STANDARDS_IMPORT_ID_RE.fullmatch(row.public_id)
    assert row.public_id != created["id"]  # a fresh id; the column was gone in between
    got = client_for(alpha.token).get(imports_url(alpha.id, row.public_id))
    assert got.json()["id"] == row.public_id
    # The ledger's record of the row still matches it, and the triggers are back.
    assert ledger.ledger_verify(alpha.project)[1] == []
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE governance_standardsimport SET public_id = 'x'")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM governance_standardsimport")
