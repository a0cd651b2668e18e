from __future__ import annotations

from memory import services
from memory.models import MemoryEntry
from tests.django_fixtures import run_in_threads


def test_it_appends_over_the_api(alpha, client_for):
    response = client_for(alpha.token).post(
        f"/v1/projects/{alpha.id}/memory", {"category": "decision", "content": "x"}, format="json"
    )
    assert response.status_code == 201
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 1


def test_threads_append_gap_free(live_db, make_project):
    target = make_project("race")
    results = run_in_threads(
        lambda i: services.memory_entry_create(
            project=target.project, author="t", category="c", content=f"n{i}"
        ),
        8,
    )
    assert not [r for r in results if isinstance(r, BaseException)]
    assert sorted(MemoryEntry.objects.values_list("seq", flat=True)) == list(range(1, 9))
    assert services.memory_chain_verify(project=target.project).ok
