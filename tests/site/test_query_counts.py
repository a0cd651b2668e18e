"""No list endpoint issues a query per item: the count is the same for 2 items and 20."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from governance import services as governance_services
from governance.skills import skill_put
from governance.standards import standards_import_submit
from memory import services
from memory.documents import document_put
from tests.governance.support import DIRECT, PLANNED

SKILL = (
    "---\nname: {name}\n"
    'description: Helps with {name}. Triggers include "{name}"\n'
    "---\n\nBody.\n"
)


def _entries(project, n):
    first = None
    for i in range(n):
        entry = services.memory_entry_create(
            project=project, author="t", category="note", content=f"entry {i} kestrel",
            corrects=first.seq if first is not None and i % 3 == 0 else None,
        ).entry
        first = first or entry


def _candidates(project, n):
    for i in range(n):
        services.candidate_create(project=project, author="t", category="note", content=f"c{i}")


def _work(project, n):
    for i in range(n):
        governance_services.work_open(project=project, author="t",
                                      **{**(DIRECT if i % 2 else PLANNED), "summary": f"w{i}"})


def _revisions(project, n):
    work = governance_services.work_open(project=project, author="t", **DIRECT).work
    for i in range(n - 1):
        governance_services.governance_update(work=work, expected_revision=i,
                                              changes={"currentSlice": f"s{i}"}, author="t")
    return work


def _documents(project, n):
    for i in range(n):
        document_put(project=project, path=f"adr/{i:04d}-x.md", content=f"# ADR {i}\n\nText.\n",
                     author="t")


def _imports(project, n):
    for i in range(n):
        standards_import_submit(project=project, path="AGENTS.md", content=f"Rule {i}.\n",
                                author="t")


def _skills(project, n):
    for i in range(n):
        name = f"skill-{i}"
        skill_put(project=project, name=name, content=SKILL.format(name=name), reason="r",
                  source=None, author="t")


LISTS = [
    ("memory", _entries, "/v1/projects/{p}/memory?limit=500"),
    ("memory search", _entries, "/v1/projects/{p}/memory?q=kestrel&limit=500"),
    ("memory current", _entries, "/v1/projects/{p}/memory?view=current&limit=500"),
    ("candidates", _candidates, "/v1/projects/{p}/memory/candidates?limit=500"),
    ("work", _work, "/v1/projects/{p}/work?limit=500"),
    ("documents", _documents, "/v1/projects/{p}/documents"),
    ("standards imports", _imports, "/v1/projects/{p}/standards/imports"),
    ("skills", _skills, "/v1/projects/{p}/skills"),
]


def _without_rate_counting(queries) -> list[dict]:
    """The request's own queries: the rate limits' counting has its own test.

    It is one upsert per limit, and once per window a clean-up, whatever the
    endpoint (tests/security/test_rate_limits.py).
    """
    return [query for query in queries if "gedweb_rate_counter" not in query["sql"]]


def _count(client, url):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200, response.content
    return len(_without_rate_counting(queries))


@pytest.mark.parametrize(("name", "seed", "url"), LISTS, ids=[row[0] for row in LISTS])
def test_a_list_costs_the_same_queries_for_2_items_and_20(name, seed, url, make_project,
                                                          client_for):
    small, large = make_project("small"), make_project("large")
    seed(small.project, 2)
    seed(large.project, 20)
    small_count = _count(client_for(small.token), url.format(p=small.id))
    large_count = _count(client_for(large.token), url.format(p=large.id))
    assert large_count == small_count
    assert small_count <= 8


def test_the_revision_list_costs_the_same_for_2_and_20_revisions(make_project, client_for):
    small, large = make_project("small"), make_project("large")
    counts = []
    for target, n in ((small, 2), (large, 20)):
        work = _revisions(target.project, n)
        url = f"/v1/projects/{target.id}/work/{work.work_id}/governance/revisions"
        counts.append(_count(client_for(target.token), url))
    assert counts[0] == counts[1] <= 8


def test_an_append_costs_the_token_lookup_the_chain_head_and_the_insert(make_project,
                                                                          client_for):
    # The hot path (docs/performance.md): the token query also brings the
    # project, the head read gives the mirror writer the rows it needs, and
    # on SQLite the writer lock of BEGIN IMMEDIATE replaces the row lock.
    alpha = make_project("alpha")
    client = client_for(alpha.token)
    for n in range(3):
        client.post(f"/v1/projects/{alpha.id}/memory", {"category": "note", "content": f"{n}"},
                    format="json")
    with CaptureQueriesContext(connection) as queries:
        response = client.post(f"/v1/projects/{alpha.id}/memory",
                               {"category": "note", "content": "counted"}, format="json")
    assert response.status_code == 201, response.content
    statements = [query["sql"].split()[0].upper() for query in _without_rate_counting(queries)]
    reads = ["SELECT", "SELECT"] if connection.vendor == "sqlite" else ["SELECT", "SELECT",
                                                                        "SELECT"]
    # The UPDATE is the entries quota's conditional charge (memory/quotas.py).
    assert [s for s in statements if s in ("SELECT", "INSERT", "UPDATE", "DELETE")] == [
        *reads, "UPDATE", "INSERT"]
    assert "memory_projecttoken" in queries[0]["sql"] and "memory_project" in queries[0]["sql"]
