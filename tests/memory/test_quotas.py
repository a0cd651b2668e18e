"""Per-project storage quotas (docs/api.md#quotas, memory/quotas.py).

Every write of the four kinds goes through the real API or the real
service; a refusal is 409 ``quota_exceeded`` naming the quota, and the
tables (and the quota's own usage) are exactly as before it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from gedweb.errors import QuotaExceeded
from governance import services as gov
from governance import skills, standards
from governance.models import EvidenceRecord, Skill, StandardsImport, TaskArtifact, WorkFile
from memory import documents, quotas, services
from memory.models import DocumentRevision, MemoryCandidate, MemoryEntry, ProjectQuota
from tests.django_fixtures import postgres_only, run_in_threads
from tests.governance.support import evidence, open_work, revision_of, work_url
from tests.site.test_settings import assert_refused, start

MIB = quotas.MIB
OVERHEAD = quotas.ROW_OVERHEAD_BYTES


def quota(project: Any, kind: str) -> ProjectQuota:
    return ProjectQuota.objects.get(project=project, kind=kind)


def place(project: Any, kind: str, *, used: int, limit_mib: int = 1) -> None:
    """Give the project's quota an override and a usage (as earlier writes would leave it)."""
    ProjectQuota.objects.filter(project=project, kind=kind).update(
        used_bytes=used, limit_mib=limit_mib
    )


def cost(text: str, rows: int = 1) -> int:
    return len(text.encode("utf-8")) + rows * OVERHEAD


def skill_text(name: str, body: str = "Body.\n") -> str:
    return f"---\nname: {name}\ndescription: Does a thing.\n---\n{body}"


def document_text(n: int) -> str:
    return f"# Decision {n}\n\nThe ledger keeps every invoice for seven years ({n}).\n"


# --- one write of each kind through the API --------------------------------------------


@dataclass
class Kind:
    """A write through the API whose stored text is known exactly, and how to count its rows."""

    quota: str
    text: Callable[[int], str]
    write: Callable[[Any, Any, int], Any]
    rows: Callable[[Any], int]


def _entry(api, target, n):
    return api.post(f"/v1/projects/{target.id}/memory",
                    {"category": "note", "content": f"entry {n} · ü"}, format="json")


def _candidate(api, target, n):
    return api.post(f"/v1/projects/{target.id}/memory/candidates",
                    {"category": "note", "content": f"candidate {n} · ü"}, format="json")


def _document(api, target, n):
    return api.put(f"/v1/projects/{target.id}/documents/adr/d{n}.md",
                   {"content": document_text(n)}, format="json")


def _standards(api, target, n):
    return api.post(f"/v1/projects/{target.id}/standards/imports",
                    {"path": "AGENTS.md", "content": f"# Rules {n}\n\nBe kind.\n"}, format="json")


def _work_file(api, target, n):
    work = target.direct_work
    return api.put(work_url(target.id, work.work_id, "files", "DIRECT.md"),
                   {"content": f"# Direct {n}\n\nFix it.\n"}, format="json")


def _task_artifact(api, target, n):
    work = target.direct_work
    return api.put(work_url(target.id, work.work_id, "tasks", "T01", "BRIEF.md"),
                   {"content": f"# T01 {n}\n\nDo it.\n"}, format="json")


def _skill(api, target, n):
    return api.put(f"/v1/projects/{target.id}/skills/s{n}",
                   {"content": skill_text(f"s{n}"), "reason": "needed"}, format="json")


KINDS = {
    "entry": Kind("entries", lambda n: f"entry {n} · ü", _entry,
                  lambda p: MemoryEntry.objects.filter(project=p).count()),
    "candidate": Kind("entries", lambda n: f"candidate {n} · ü", _candidate,
                      lambda p: MemoryCandidate.objects.filter(project=p).count()),
    "document": Kind("documents", document_text, _document,
                     lambda p: DocumentRevision.objects.filter(project=p).count()),
    "standards import": Kind("documents", lambda n: f"# Rules {n}\n\nBe kind.\n", _standards,
                             lambda p: StandardsImport.objects.filter(project=p).count()),
    "work file": Kind("work_files", lambda n: f"# Direct {n}\n\nFix it.\n", _work_file,
                      lambda p: WorkFile.objects.filter(work__project=p).count()),
    "task artifact": Kind("work_files", lambda n: f"# T01 {n}\n\nDo it.\n", _task_artifact,
                          lambda p: TaskArtifact.objects.filter(work__project=p).count()),
    "skill": Kind("skills", lambda n: skill_text(f"s{n}"), _skill,
                  lambda p: Skill.objects.filter(project=p).count()),
}


@pytest.fixture
def target(alpha):
    alpha.direct_work = open_work(alpha.project)
    return alpha


@pytest.fixture
def api(target, client_for):
    return client_for(target.token)


def head(project) -> Any:
    return MemoryEntry.objects.for_project(project).head()


@pytest.mark.parametrize("name", list(KINDS))
def test_a_write_over_its_quota_is_409_naming_the_quota_and_stores_nothing(target, api, name):
    kind = KINDS[name]
    used = MIB - cost(kind.text(1)) + 1  # one byte short of room
    place(target.project, kind.quota, used=used)
    rows, chain = kind.rows(target.project), head(target.project)

    response = kind.write(api, target, 1)

    assert response.status_code == 409, response.content
    body = response.json()
    assert body["code"] == "quota_exceeded"
    assert body["quota"] == kind.quota
    assert (body["limit_bytes"], body["used_bytes"]) == (MIB, used)
    assert f"1 MiB {kind.quota} quota" in body["message"]
    assert "raise it in the admin" in body["message"]
    assert kind.rows(target.project) == rows
    assert head(target.project) == chain
    assert quota(target.project, kind.quota).used_bytes == used


@pytest.mark.parametrize("name", list(KINDS))
def test_a_write_that_fills_the_quota_exactly_passes_and_the_next_is_refused(target, api,
                                                                               name):
    kind = KINDS[name]
    place(target.project, kind.quota, used=MIB - cost(kind.text(1)))
    rows = kind.rows(target.project)

    assert kind.write(api, target, 1).status_code in (200, 201)
    assert kind.rows(target.project) == rows + 1
    assert quota(target.project, kind.quota).used_bytes == MIB

    refused = kind.write(api, target, 2)
    assert refused.status_code == 409 and refused.json()["quota"] == kind.quota
    assert kind.rows(target.project) == rows + 1


def test_each_write_charges_its_utf8_bytes_and_one_row(target, api):
    before = quota(target.project, "entries").used_bytes
    text = "Zürich → 東京"  # 11 characters, 18 bytes of UTF-8
    response = api.post(f"/v1/projects/{target.id}/memory", {"category": "note", "content": text},
                        format="json")
    assert response.status_code == 201
    assert quota(target.project, "entries").used_bytes == before + 18 + OVERHEAD


def test_evidence_counts_against_the_work_files_quota_and_a_refusal_adds_no_revision(target,
                                                                                      api):
    work = target.direct_work
    place(target.project, "work_files", used=MIB - 100)
    revision = revision_of(work)
    response = api.post(work_url(target.id, work.work_id, "governance", "evidence"),
                        {"expected_revision": revision,
                         "evidence": evidence("inspection", "observed")}, format="json")
    assert response.status_code == 409 and response.json()["quota"] == "work_files"
    assert revision_of(work) == revision
    assert EvidenceRecord.objects.filter(work=work).count() == 0
    assert quota(target.project, "work_files").used_bytes == MIB - 100


def test_an_evidence_record_is_charged_its_stored_json(target):
    work = target.direct_work
    before = quota(target.project, "work_files").used_bytes
    gov.evidence_append(work=work, expected_revision=revision_of(work),
                        evidence=evidence("inspection", "observed"), policy="none", author="t")
    record = EvidenceRecord.objects.get(work=work)
    assert quota(target.project, "work_files").used_bytes == before + cost(record.record_json)


def test_opening_work_charges_its_template_files(alpha):
    before = quota(alpha.project, "work_files").used_bytes
    work = open_work(alpha.project)
    files = WorkFile.objects.filter(work=work)
    assert quota(alpha.project, "work_files").used_bytes == before + sum(
        cost(f.content) for f in files
    )


def test_opening_work_over_the_quota_stores_no_work_item(alpha, api):
    place(alpha.project, "work_files", used=MIB)
    with pytest.raises(QuotaExceeded):
        open_work(alpha.project)
    assert WorkFile.objects.filter(work__project=alpha.project).count() == 1  # the fixture's


def test_a_write_that_changes_nothing_charges_nothing(target, api):
    assert _document(api, target, 1).status_code == 201
    place(target.project, "documents", used=MIB)  # full: a new revision would be refused
    same = api.put(f"/v1/projects/{target.id}/documents/adr/d1.md",
                   {"content": document_text(1), "expected_revision": 1}, format="json")
    assert same.status_code == 200, same.content
    assert _skill(api, target, 1).status_code == 201
    place(target.project, "skills", used=MIB)
    assert _skill(api, target, 1).status_code == 200  # confirmed, nothing new stored
    assert quota(target.project, "skills").used_bytes == MIB


def test_quotas_are_per_project(alpha, beta, client_for):
    place(alpha.project, "entries", used=MIB)
    refused = client_for(alpha.token).post("/v1/projects/alpha/memory",
                                           {"category": "note", "content": "x"}, format="json")
    assert refused.status_code == 409
    accepted = client_for(beta.token).post("/v1/projects/beta/memory",
                                           {"category": "note", "content": "x"}, format="json")
    assert accepted.status_code == 201


def test_the_installations_default_applies_without_an_override(alpha, client_for, settings):
    settings.QUOTAS_MIB = {**settings.QUOTAS_MIB, "entries": 2}
    ProjectQuota.objects.filter(project=alpha.project, kind="entries").update(
        used_bytes=2 * MIB - cost("x") + 1
    )
    response = client_for(alpha.token).post("/v1/projects/alpha/memory",
                                            {"category": "note", "content": "x"}, format="json")
    assert response.status_code == 409
    assert response.json()["limit_bytes"] == 2 * MIB
    settings.QUOTAS_MIB = {**settings.QUOTAS_MIB, "entries": 3}
    response = client_for(alpha.token).post("/v1/projects/alpha/memory",
                                            {"category": "note", "content": "x"}, format="json")
    assert response.status_code == 201


def test_a_project_without_quota_rows_gets_them_at_its_first_write(alpha):
    ProjectQuota.objects.filter(project=alpha.project).delete()
    services.memory_entry_create(project=alpha.project, author="t", category="note",
                                 content="first")
    assert quota(alpha.project, "entries").used_bytes == cost("first")
    assert quota(alpha.project, "entries").limit_mib is None


def test_a_new_project_has_its_four_quotas_at_zero(alpha):
    rows = ProjectQuota.objects.filter(project=alpha.project).order_by("kind")
    assert [(row.kind, row.used_bytes, row.limit_mib) for row in rows] == [
        ("documents", 0, None), ("entries", 0, None), ("skills", 0, None),
        ("work_files", 0, None),
    ]


def test_the_demo_project_has_its_four_quotas_too(db):
    project = services.demo_project_ensure()
    services.demo_project_ensure()  # every start runs it: still one row per kind
    rows = ProjectQuota.objects.filter(project=project).order_by("kind")
    assert [(row.kind, row.used_bytes) for row in rows] == [
        ("documents", 0), ("entries", 0), ("skills", 0), ("work_files", 0),
    ]


# --- idempotent replays and candidates --------------------------------------------------------


def test_an_idempotent_replay_is_not_charged_again(alpha, client_for):
    api = client_for(alpha.token)
    body = {"category": "note", "content": "once"}
    first = api.post("/v1/projects/alpha/memory", body, format="json",
                     HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == 201
    used = quota(alpha.project, "entries").used_bytes
    assert used == cost("once")
    place(alpha.project, "entries", used=MIB)  # full: only a replay can still answer
    replay = api.post("/v1/projects/alpha/memory", body, format="json",
                      HTTP_IDEMPOTENCY_KEY="k-1")
    assert replay.status_code == 201, replay.content
    assert replay["Idempotent-Replayed"] == "true"
    assert replay.json()["id"] == first.json()["id"]
    assert quota(alpha.project, "entries").used_bytes == MIB
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 1


def test_approving_a_candidate_over_the_quota_keeps_it_pending(alpha, admin_client):
    candidate = services.candidate_create(project=alpha.project, author="t", category="note",
                                          content="proposed")
    place(alpha.project, "entries", used=MIB - cost("proposed") + 1)
    response = admin_client.post(
        f"/v1/projects/alpha/memory/candidates/{candidate.uuid}/approve", format="json")
    assert response.status_code == 409, response.content
    assert response.json()["quota"] == "entries"
    candidate.refresh_from_db()
    assert candidate.status == MemoryCandidate.Status.PENDING
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 0


# --- imports -----------------------------------------------------------------------------------


def ferryman_mirror(path: Path, count: int) -> Path:
    blocks = [
        f"\n## 2026-03-01T10:15:{n:02d}+00:00 · decision\n\nImported fact {n}.\n\n"
        f"_Source: operator | Entry: 1111111{n}-1111-4111-8111-111111111111_\n"
        for n in range(count)
    ]
    path.write_text("".join(blocks), encoding="utf-8")
    return path


def test_a_ferryman_import_over_the_quota_stops_with_one_line_and_stores_nothing(alpha,
                                                                                 tmp_path):
    source = ferryman_mirror(tmp_path / "MEMORY.md", 3)
    needed = sum(cost(f"Imported fact {n}.") for n in range(3))
    place(alpha.project, "entries", used=MIB - needed + 1)
    with pytest.raises(CommandError) as raised:
        call_command("ferryman_import", "--project", "alpha", "--mirror", str(source),
                     stdout=StringIO(), stderr=StringIO())
    message = str(raised.value)
    assert "\n" not in message
    assert "entries quota" in message and "nothing of this import was stored" in message
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 0
    assert quota(alpha.project, "entries").used_bytes == MIB - needed + 1


def test_a_ferryman_import_that_fits_exactly_is_charged_once_per_row(alpha, tmp_path):
    source = ferryman_mirror(tmp_path / "MEMORY.md", 3)
    needed = sum(cost(f"Imported fact {n}.") for n in range(3))
    place(alpha.project, "entries", used=MIB - needed)
    call_command("ferryman_import", "--project", "alpha", "--mirror", str(source),
                 stdout=StringIO(), stderr=StringIO())
    assert MemoryEntry.objects.filter(project=alpha.project).count() == 3
    assert quota(alpha.project, "entries").used_bytes == MIB
    # A second run replays every row: nothing stored, nothing charged.
    out = StringIO()
    call_command("ferryman_import", "--project", "alpha", "--mirror", str(source), stdout=out,
                 stderr=StringIO())
    assert json.loads(out.getvalue())["already_present"] == 3
    assert quota(alpha.project, "entries").used_bytes == MIB


def every_row() -> dict[str, list]:
    from django.apps import apps

    return {model._meta.label: list(model.objects.order_by("pk").values())
            for label in ("memory", "governance")
            for model in apps.get_app_config(label).get_models()}


def test_a_ged_import_over_a_quota_stops_naming_it_and_leaves_every_table_as_it_was(alpha,
                                                                                    tmp_path):
    from tests.interop.gedpi_trees import migrated_checkout, write_tree

    tree = write_tree(tmp_path / "src", migrated_checkout())
    place(alpha.project, "work_files", used=MIB - 10)  # documents and skills fit; work does not
    before = every_row()
    with pytest.raises(CommandError) as raised:
        call_command("ged_import", str(tree), "--project", "alpha", stdout=StringIO(),
                     stderr=StringIO())
    message = str(raised.value)
    assert "\n" not in message.strip()
    assert "work_files quota" in message and "nothing of this import was stored" in message
    assert every_row() == before


def test_a_ged_import_charges_what_it_stores(alpha, tmp_path):
    from tests.interop.gedpi_trees import migrated_checkout, write_tree

    tree = write_tree(tmp_path / "src", migrated_checkout())
    call_command("ged_import", str(tree), "--project", "alpha", stdout=StringIO(),
                 stderr=StringIO())
    assert usage_by_recount()[("alpha", "documents")] == quota(alpha.project,
                                                               "documents").used_bytes
    assert usage_by_recount() == stored_usage()


# --- the backfill of migration 0010 -------------------------------------------------------------


def usage_by_recount() -> dict[tuple[str, str], int]:
    """Every stored row's cost, recounted in Python from the tables."""
    totals: dict[tuple[str, str], int] = {}

    def add(project_id: str, kind: str, text: str) -> None:
        totals[(project_id, kind)] = totals.get((project_id, kind), 0) + cost(text)

    for row in MemoryEntry.objects.all():
        add(row.project_id, "entries", row.content)
    for row in MemoryCandidate.objects.all():
        add(row.project_id, "entries", row.content)
    for row in DocumentRevision.objects.all():
        add(row.project_id, "documents", row.content)
    for row in StandardsImport.objects.all():
        add(row.project_id, "documents", row.content)
    for row in WorkFile.objects.select_related("work"):
        add(row.work.project_id, "work_files", row.content)
    for row in TaskArtifact.objects.select_related("work"):
        add(row.work.project_id, "work_files", row.content)
    for row in EvidenceRecord.objects.select_related("work"):
        add(row.work.project_id, "work_files", row.record_json)
    for row in Skill.objects.all():
        add(row.project_id, "skills", row.content)
    return totals


def stored_usage() -> dict[tuple[str, str], int]:
    return {(row.project_id, row.kind): row.used_bytes
            for row in ProjectQuota.objects.all() if row.used_bytes}


def seed_every_kind(target: Any) -> None:
    p = target.project
    services.memory_entry_create(project=p, author="t", category="note", content="Zürich 東京")
    candidate = services.candidate_create(project=p, author="t", category="note",
                                          content="proposed")
    services.candidate_approve(project=p, candidate=candidate, by="user:olga")
    documents.document_put(project=p, path="PROJECT.md", author="t", content=document_text(1))
    standards.standards_import_submit(project=p, path="AGENTS.md", content="# R\n\nKind.\n",
                                      author="t")
    work = open_work(p)
    gov.work_file_write(work=work, name="DIRECT.md", content="# D\n\nFix ü.\n", author="t")
    gov.task_artifact_write(work=work, task_id="T01", name="BRIEF.md", content="# B\n",
                            author="t")
    gov.evidence_append(work=work, expected_revision=revision_of(work),
                        evidence=evidence("inspection", "observed"), policy="none", author="t")
    skills.skill_put(project=p, name="deploy", content=skill_text("deploy"), reason="r",
                     source=None, author="t")


def test_every_service_charges_what_a_recount_of_the_tables_finds(alpha, beta):
    seed_every_kind(alpha)
    seed_every_kind(beta)
    assert stored_usage() == usage_by_recount()


def test_migration_0010_backfills_the_usage_of_rows_stored_before_it(live_db, make_project):
    alpha, beta = make_project("alpha"), make_project("beta")
    seed_every_kind(alpha)
    seed_every_kind(beta)
    make_project("empty")
    charged = stored_usage()
    assert charged == usage_by_recount()

    executor = MigrationExecutor(connection)
    executor.migrate([("memory", "0009_rate_limit_cache")])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert stored_usage() == charged
    # Every project has its four rows, the one without data at zero.
    assert ProjectQuota.objects.filter(project_id="empty").count() == 4
    assert set(ProjectQuota.objects.filter(project_id="empty")
               .values_list("used_bytes", flat=True)) == {0}
    assert ProjectQuota.objects.count() == 12


# --- a race near the limit on PostgreSQL ---------------------------------------------------


@postgres_only
def test_concurrent_appends_near_the_limit_never_take_the_quota_past_it(live_db, make_project):
    target = make_project("race")
    content = "x" * 744  # 744 + 256 = 1,000 bytes per entry
    room = 5_500  # room for 5 of 16
    place(target.project, "entries", used=MIB - room)

    def append(index: int) -> Any:
        return services.memory_entry_create(project=target.project, author=f"w{index}",
                                            category="race", content=content).entry.seq

    results = run_in_threads(append, 16)
    accepted = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, QuotaExceeded)]
    assert len(accepted) == 5 and len(refused) == 11, results
    assert all(error.extra["quota"] == "entries" for error in refused)
    used = quota(target.project, "entries").used_bytes
    assert used == MIB - room + 5 * 1_000 <= MIB
    assert MemoryEntry.objects.filter(project=target.project).count() == 5
    assert services.memory_chain_verify(project=target.project).ok


@postgres_only
def test_concurrent_candidates_near_the_limit_never_take_the_quota_past_it(live_db,
                                                                           make_project):
    # Proposals take no project lock: the quota's conditional UPDATE alone decides.
    target = make_project("race")
    room = 7_999  # room for 7 of 16 at 1,000 bytes each, not 8
    place(target.project, "entries", used=MIB - room)
    results = run_in_threads(
        lambda i: services.candidate_create(project=target.project, author=f"w{i}",
                                            category="note", content=f"{i:02d}" + "y" * 742).pk,
        16,
    )
    accepted = [r for r in results if isinstance(r, int)]
    assert len(accepted) == 7, results
    assert all(isinstance(r, QuotaExceeded) for r in results if not isinstance(r, int))
    assert quota(target.project, "entries").used_bytes == MIB - room + 7_000 <= MIB
    assert MemoryCandidate.objects.filter(project=target.project).count() == 7


@postgres_only
def test_concurrent_first_writes_create_one_quota_row(live_db, make_project):
    target = make_project("race")
    ProjectQuota.objects.filter(project=target.project).delete()
    results = run_in_threads(
        lambda i: services.candidate_create(project=target.project, author=f"w{i}",
                                            category="note", content=f"c{i}").pk, 8)
    assert all(isinstance(r, int) for r in results), results
    assert quota(target.project, "entries").used_bytes == sum(cost(f"c{i}") for i in range(8))


# --- settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [
    ("GEDWEB_QUOTA_ENTRIES_MIB", "0"),
    ("GEDWEB_QUOTA_DOCUMENTS_MIB", "ten"),
    ("GEDWEB_QUOTA_WORK_FILES_MIB", "-5"),
    ("GEDWEB_QUOTA_SKILLS_MIB", "1.5"),
])
def test_a_malformed_quota_stops_the_start_naming_the_variable(tmp_path, name, value):
    assert_refused(start(tmp_path, **{name: value}), name)


def test_quota_defaults_and_overrides_from_the_environment(tmp_path):
    code = ("import json, os; os.environ['DJANGO_SETTINGS_MODULE']='gedweb.settings';"
            " from django.conf import settings as s; print(json.dumps(s.QUOTAS_MIB))")
    default = start(tmp_path, code)
    assert default.returncode == 0, default.stderr
    assert json.loads(default.stdout) == {"entries": 256, "documents": 256, "work_files": 1024,
                                          "skills": 64}
    changed = start(tmp_path, code, GEDWEB_QUOTA_SKILLS_MIB="8")
    assert json.loads(changed.stdout)["skills"] == 8
