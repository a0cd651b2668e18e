"""Concurrent governance writers (contract §5; gedpi-behaviour.md §2.4, §2.7, gap G-1).

Real threads with their own connections against committed data. On
PostgreSQL they contend on the project lock (memory.locks); on SQLite on
the write lock BEGIN IMMEDIATE takes. Either way a revision is taken exactly once and
a writer holding a stale revision is refused, never silently merged.
"""

from __future__ import annotations

from collections import Counter

from governance import services
from governance.models import EvidenceRecord, GovernanceRevision, TaskArtifact, WorkFile, WorkItem
from tests.django_fixtures import bearer_client, run_in_threads
from tests.governance.support import (
    DIRECT,
    WORK_ID,
    evidence,
    gov_url,
    open_work,
    revision_of,
    transition,
)

THREADS = 16
STORM_THREADS = 8
STORM_APPENDS = 10
MAX_RETRIES = 500


def revisions(work: WorkItem) -> list[int]:
    return list(GovernanceRevision.objects.filter(work=work).order_by("revision")
                .values_list("revision", flat=True))


def evidence_ids(work: WorkItem) -> list[str]:
    return list(EvidenceRecord.objects.filter(work=work).order_by("position")
                .values_list("evidence_id", flat=True))


def test_only_one_of_many_appends_at_the_same_revision_wins(live_db, make_project):
    target = make_project("race")
    work = open_work(target.project)
    services.evidence_append(work=work, expected_revision=0, policy="none", author="seed",
                             evidence=evidence("inspection", "observed", id="seed"))

    def attempt(index: int) -> dict:
        return services.evidence_append(
            work=work, expected_revision=1, policy="none", author=f"worker-{index}",
            evidence=evidence("inspection", "observed", id=f"e{index}"))

    results = run_in_threads(attempt, THREADS)
    wins = [r for r in results if isinstance(r, dict)]
    losses = [r for r in results if not isinstance(r, dict)]
    assert len(wins) == 1
    assert len(losses) == THREADS - 1
    assert all(isinstance(loss, services.StaleRevision) for loss in losses), losses
    assert {loss.extra["current_revision"] for loss in losses} == {2}
    assert wins[0]["revision"] == 2
    assert revisions(work) == [0, 1, 2]
    assert evidence_ids(work) == ["seed", wins[0]["evidence"][-1]["id"]]


def test_only_one_of_many_http_appends_at_the_same_revision_wins(live_db, make_project):
    target = make_project("race")
    work = open_work(target.project)
    url = gov_url(target.id, work.work_id, "evidence")

    def attempt(index: int):
        client = bearer_client(target.token)
        return client.post(url, {"expected_revision": 0, "evidence": evidence(
            "inspection", "observed", id=f"e{index}")}, format="json")

    responses = run_in_threads(attempt, THREADS)
    assert not [r for r in responses if isinstance(r, BaseException)], responses
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 1, 409: THREADS - 1}
    refusals = [r.json() for r in responses if r.status_code == 409]
    assert {(body["code"], body["current_revision"]) for body in refusals} == {
        ("stale_revision", 1)}
    winner = next(r.json() for r in responses if r.status_code == 200)
    assert revisions(work) == [0, 1]
    assert evidence_ids(work) == [winner["evidence"][0]["id"]]


def test_a_storm_of_retrying_writers_takes_every_revision_exactly_once(live_db, make_project):
    target = make_project("race")
    work = open_work(target.project)

    def writer(index: int) -> list[int]:
        taken = []
        for n in range(STORM_APPENDS):
            for _ in range(MAX_RETRIES):
                try:
                    document = services.evidence_append(
                        work=work, expected_revision=revision_of(work), policy="none",
                        author=f"writer-{index}",
                        evidence=evidence("inspection", "observed", id=f"w{index}-{n}"))
                except services.StaleRevision:
                    continue
                taken.append(document["revision"])
                break
        return taken

    results = run_in_threads(writer, STORM_THREADS)
    assert not [r for r in results if isinstance(r, BaseException)], results
    total = STORM_THREADS * STORM_APPENDS
    assert all(len(taken) == STORM_APPENDS for taken in results)
    assert sorted(rev for taken in results for rev in taken) == list(range(1, total + 1))
    assert revisions(work) == list(range(total + 1))
    assert list(GovernanceRevision.objects.filter(work=work).order_by("revision")
                .values_list("evidence_count", flat=True)) == list(range(total + 1))
    ids = evidence_ids(work)
    assert sorted(ids) == sorted(f"w{i}-{n}" for i in range(STORM_THREADS)
                                 for n in range(STORM_APPENDS))
    for index in range(STORM_THREADS):
        own = [i for i in ids if i.startswith(f"w{index}-")]
        assert own == [f"w{index}-{n}" for n in range(STORM_APPENDS)]
    document = services.governance_document(work)
    assert document["revision"] == total
    assert [e["id"] for e in document["evidence"]] == ids


def test_concurrent_resume_and_abandon_of_paused_work_let_exactly_one_win(live_db,
                                                                            make_project):
    """Scenario 20."""
    target = make_project("race")
    work = open_work(target.project)
    transition(work, "pause")
    actions = ["resume", "abandon"] * 4

    def attempt(index: int) -> dict:
        return services.lifecycle_transition(
            work=work, expected_revision=1, action=actions[index], reason=f"racer {index}",
            expected_lifecycle="paused", author=f"racer-{index}")

    results = run_in_threads(attempt, len(actions))
    wins = [r for r in results if isinstance(r, dict)]
    losses = [r for r in results if not isinstance(r, dict)]
    assert len(wins) == 1
    assert all(isinstance(loss, (services.StaleRevision, services.GovernanceBlocked))
               for loss in losses), losses
    document = services.governance_document(work)
    assert document["revision"] == 2
    assert len(document["lifecycleTransitions"]) == 2
    assert document["lifecycle"] == wins[0]["lifecycle"] in ("active", "abandoned")
    assert revisions(work) == [0, 1, 2]


def test_a_loser_retrying_with_a_fresh_revision_sees_the_changed_lifecycle(live_db,
                                                                            make_project):
    target = make_project("race")
    work = open_work(target.project)
    transition(work, "pause")
    actions = ["resume", "abandon"]

    def attempt(index: int):
        try:
            return services.lifecycle_transition(
                work=work, expected_revision=1, action=actions[index], reason="race",
                expected_lifecycle="paused", author="racer")
        except services.StaleRevision:
            return services.lifecycle_transition(
                work=work, expected_revision=revision_of(work), action=actions[index],
                reason="retry", expected_lifecycle="paused", author="racer")

    results = run_in_threads(attempt, 2)
    losses = [r for r in results if isinstance(r, BaseException)]
    assert len(losses) == 1
    assert isinstance(losses[0], services.GovernanceBlocked)
    assert "lifecycle changed from expected paused to" in losses[0].message
    assert revisions(work) == [0, 1, 2]


def test_concurrent_opens_get_distinct_ids(live_db, make_project):
    """Scenario 31: the same summary eight times at once."""
    target = make_project("race")

    def attempt(index: int) -> str:
        return services.work_open(project=target.project, author=f"opener-{index}",
                                  **DIRECT).work.work_id

    results = run_in_threads(attempt, 8)
    assert not [r for r in results if isinstance(r, BaseException)], results
    assert len(set(results)) == 8
    assert all(WORK_ID.match(work_id) for work_id in results)
    assert sorted(WorkItem.objects.values_list("work_id", flat=True)) == sorted(results)
    for work in WorkItem.objects.all():
        assert work.meta()["workId"] == work.work_id
        assert revisions(work) == [0]
        assert services.governance_document(work)["workId"] == work.work_id


def test_imports_and_writes_of_one_work_file_at_once_take_every_version_exactly_once(
        live_db, make_project):
    """One counter, one lock: ged_import's path and the API's number versions alike.

    The import path used to read the newest version before it took any lock
    (and then two: the project's and the work item's), so importers released
    together numbered the same version and all but one failed.
    """
    target = make_project("race")
    work = open_work(target.project)
    opened = list(WorkFile.objects.filter(work=work, name="DIRECT.md")
                  .values_list("version", "content"))
    assert [version for version, _ in opened] == [1]  # work_open writes the template

    def attempt(index: int) -> object:
        content = f"# DIRECT {index}\n"
        if index % 2:
            return services.work_file_import(work=work, name="DIRECT.md", content=content,
                                             author=f"importer-{index}")
        return services.work_file_write(work=work, name="DIRECT.md", content=content,
                                        author=f"writer-{index}")

    results = run_in_threads(attempt, THREADS)
    assert not [r for r in results if isinstance(r, BaseException)], results
    rows = list(WorkFile.objects.filter(work=work, name="DIRECT.md").order_by("version")
                .values_list("version", "content"))
    assert [version for version, _ in rows] == list(range(1, THREADS + 2))
    assert rows[0] == opened[0]
    assert sorted(content for _, content in rows[1:]) == sorted(
        f"# DIRECT {index}\n" for index in range(THREADS))


def test_imports_of_one_task_artifact_at_once_take_every_version_exactly_once(live_db,
                                                                              make_project):
    target = make_project("race")
    work = open_work(target.project)

    def attempt(index: int) -> bool:
        return services.task_artifact_import(work=work, task_id="T01", name="BRIEF.md",
                                             content=f"# T01 brief {index}\n",
                                             author=f"importer-{index}")

    results = run_in_threads(attempt, THREADS)
    assert results == [True] * THREADS
    assert list(TaskArtifact.objects.filter(work=work, task_id="T01", name="BRIEF.md")
                .order_by("version").values_list("version", flat=True)) == list(
        range(1, THREADS + 1))
