"""A secret in any stored text, redacted from its scan finding (issue 35, item 4).

`manage.py memory scan` finds a secret in a candidate, a document, a
standards import, a skill, a work item or file, a task artifact, evidence or
a governance revision; the finding's admin link cuts exactly the secret out
(memory.redaction.finding_redact). Each test stores a token the scanner does
not know yet, then configures it (as an operator who rotates a token would),
so the text reaches the database through the ordinary write paths.
"""

from __future__ import annotations

import importlib
import io
import json
import secrets
import zipfile
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client

from gedweb import append_only
from gedweb.errors import InvalidState, SecretDetected
from gedweb.lib.digest import sha256_text
from governance import doctor, ledger
from governance import services as gov_services
from governance.models import (
    ContextBundle,
    EvidenceRecord,
    GovernanceRevision,
    Skill,
    StandardsImport,
    TaskArtifact,
    WorkFile,
    WorkItem,
)
from governance.skills import skill_put
from governance.standards import served_imports, standards_import_submit
from memory import redaction, services
from memory.documents import document_put
from memory.models import (
    DocumentRevision,
    MemoryCandidate,
    Project,
    SecretFinding,
    TextRedaction,
)
from tests.governance.support import DIRECT, PLANNED, open_work


def _token() -> str:
    # Fresh in every test, so no other test's rows or free pages hold it.
    return f"rotated-admin-token-{secrets.token_hex(12)}"


def _work(project: Project, plan: dict[str, Any] = DIRECT) -> WorkItem:
    return open_work(project, plan)


# source -> (write the text, the table the secret lands in)
WRITERS: dict[str, Callable[[Project, str], Any]] = {
    "candidate": lambda project, token: services.candidate_create(
        project=project, author="cli", category="note", content=f"deploy with {token} today"),
    "document": lambda project, token: document_put(
        project=project, path="CONTEXT.md", content=f"# Context\n\nThe key: {token}\n",
        author="cli"),
    "standards_import": lambda project, token: standards_import_submit(
        project=project, path="AGENTS.md", content=f"# Rules\n\nUse {token}.\n", author="cli"),
    "skill": lambda project, token: skill_put(
        project=project, name="deploy",
        content=f"---\nname: deploy\ndescription: Deploy it.\n---\n\nRun with {token}\n",
        reason="needed", source=None, author="cli"),
    "work_file": lambda project, token: gov_services.work_file_write(
        work=_work(project), name="DIRECT.md", content=f"# Direct\n\nuse {token}\n",
        author="cli"),
    "task_artifact": lambda project, token: gov_services.task_artifact_write(
        work=_work(project, PLANNED), task_id="T1", name="BRIEF.md",
        content=f"brief: {token}", author="cli"),
    "evidence": lambda project, token: (lambda work: gov_services.evidence_append(
        work=work, expected_revision=gov_services.latest_revision(work).revision,
        evidence={"kind": "verification", "source": "agent", "summary": f"ran with {token}",
                  "outcome": "observed"},
        policy="none", author="cli"))(_work(project)),
    "work_item": lambda project, token: gov_services.work_open(
        project=project, author="cli", **{**DIRECT, "summary": f"Rotate {token} now"}),
}

TABLES = {"candidate": MemoryCandidate, "document": DocumentRevision,
          "standards_import": StandardsImport, "skill": Skill, "work_file": WorkFile,
          "task_artifact": TaskArtifact, "evidence": EvidenceRecord, "work_item": WorkItem,
          "governance_revision": GovernanceRevision}


@pytest.fixture
def root(django_user_model: Any) -> Client:
    user = django_user_model.objects.create_superuser("root", "root@example.org", "pw-x-123")
    client = Client()
    client.force_login(user)
    return client


def _scan(project: Project) -> list[SecretFinding]:
    """`memory scan` of the project; the findings it kept (none: it exited 0)."""
    try:
        call_command("memory", "scan", "--project", project.pk, stdout=StringIO())
    except CommandError:
        pass
    return list(SecretFinding.objects.filter(project=project).order_by("id"))


def _stored_anywhere(token: str) -> list[str]:
    """Every table that still holds ``token`` in a text column (the redactable ones and copies)."""
    holding = []
    for model in [*TABLES.values(), ContextBundle]:
        texts = [f.column for f in model._meta.concrete_fields
                 if f.get_internal_type() in ("TextField", "CharField")]
        if any(model.objects.filter(**{f"{column}__contains": token}).exists()
               for column in texts):
            holding.append(model._meta.db_table)
    return holding


def _verifies(project: Project) -> None:
    for check in (doctor.check_governance, doctor.check_standards, doctor.check_ledger,
                  doctor.check_skills, doctor.check_text_redactions):
        outcome = check(project)
        assert not outcome.problems, (check.__name__, outcome.problems)
    triggers = doctor.check_append_only_triggers()
    assert not triggers.problems, triggers.problems


def _redact_in_admin(root: Client, finding: SecretFinding, reason: str) -> Any:
    url = f"/admin/memory/secretfinding/{finding.pk}/redact/"
    listed = root.get("/admin/memory/secretfinding/").content.decode()
    assert f'<a href="{url}">redact ' in listed
    page = root.get(url)
    assert page.status_code == 200
    return root.post(url, {"confirm": "yes", "reason": reason})


@pytest.mark.parametrize("source", sorted(WRITERS))
def test_each_sources_secret_is_found_redacted_from_the_admin_and_gone(alpha, root, settings,
                                                                       source):
    project, token = alpha.project, _token()
    WRITERS[source](project, token)
    settings.ADMIN_TOKEN = token
    found = _scan(project)
    assert source in {finding.source for finding in found}
    assert _stored_anywhere(token)

    # Every finding links to its redaction; following each one clears the project.
    for _ in range(len(found) + 2):
        finding = next(iter(_scan(project)), None)
        if finding is None:
            break
        page = root.get(f"/admin/memory/secretfinding/{finding.pk}/redact/").content.decode()
        assert token not in page
        done = _redact_in_admin(root, finding, "a token found by memory scan")
        assert done.status_code == 302, done.content.decode()[:2000]
    assert _scan(project) == []

    assert _stored_anywhere(token) == []
    records = list(TextRedaction.objects.filter(project=project))
    assert source in {record.source for record in records}
    for record in records:
        assert (record.redacted_by, record.reason) == ("user:root",
                                                       "a token found by memory scan")
        model = TABLES[record.source]
        text = getattr(model.objects.get(pk=record.row_id), record.column_name)
        assert record.notice in text and sha256_text(text) == record.after_sha256
        assert record.notice.startswith("[redacted by user:root at ")
    audit = root.get("/admin/memory/textredaction/").content.decode()
    assert "a token found by memory scan" in audit and token not in audit
    _verifies(project)


def test_a_document_keeps_its_sha256_ledger_and_recall_and_the_bundle_is_scrubbed(alpha, root,
                                                                                  settings):
    from governance.context import context_deliver
    from governance.models import ContextDelivery

    project, token = alpha.project, _token()
    revision = document_put(project=project, path="CONTEXT.md",
                            content=f"# Context\n\nThe key: {token}\n", author="cli").document
    context_deliver(project=project, work=None, author="agent", output_format="text")
    bundle = ContextBundle.objects.get(project=project)
    assert token in bundle.text
    settings.ADMIN_TOKEN = token
    (finding,) = _scan(project)
    before = revision.sha256

    result = redaction.finding_redact(finding_id=finding.pk, reason="a rotated token",
                                      by="user:olga")
    assert isinstance(result, redaction.TextRedactionResult)
    assert result.copies_scrubbed == {"document_vectors": 0, "context_bundles": 1}
    revision = DocumentRevision.objects.get(pk=revision.pk)
    record = result.redaction
    assert revision.content == f"# Context\n\nThe key: {record.notice}\n"
    assert record.notice.startswith("[redacted by user:olga at ")
    assert record.notice.endswith(": a rotated token]")
    assert revision.sha256 == before == record.before_sha256
    assert redaction.committed_sha256(revision, "content") == before
    assert ledger.ledger_verify(project)[1] == []
    bundle.refresh_from_db()
    assert token not in bundle.text and record.notice in bundle.text
    assert bundle.text_redaction_id == record.pk and bundle.redaction_id is None
    sections = json.loads(bundle.sections)
    assert sum(length for *_, length in sections) + 2 * (len(sections) - 1) + 1 == len(
        bundle.text)
    # The delivery's page and raw bytes say they are no longer what was delivered.
    delivery = ContextDelivery.objects.get(project=project)
    page = root.get(f"/p/{project.pk}/context/{delivery.pk}").content.decode()
    assert 'id="bundle-text-redacted"' in page and token not in page
    raw = root.get(f"/p/{project.pk}/context/{delivery.pk}/bundle")
    assert raw["X-Context-Text-Redaction"] == str(record.pk)
    assert token.encode() not in raw.content and record.notice.encode() in raw.content
    # The documents archive says the file is no longer the bytes its sha256 names.
    export = root.get(f"/p/{project.pk}/documents.zip")
    body = b"".join(export.streaming_content)
    assert token.encode() not in body
    archive = zipfile.ZipFile(io.BytesIO(body))
    (listed,) = json.loads(archive.read(f"{project.pk}-documents/MANIFEST.json"))
    assert (listed["sha256"], listed["redacted"], listed["content_sha256"]) == (
        before, True, sha256_text(revision.content))
    assert _scan(project) == []


def test_a_skill_stays_verified_and_a_standards_import_keeps_its_decision_hash(alpha,
                                                                               settings):
    project, token = alpha.project, _token()
    skill = skill_put(project=project, name="deploy",
                      content=f"---\nname: deploy\ndescription: Deploy it.\n---\n\nRun {token}\n",
                      reason="needed", source=None, author="cli").skill
    submitted, _ = standards_import_submit(project=project, path="AGENTS.md",
                                           content=f"# Rules\n\nUse {token}.\n", author="cli")
    assert skill.verified
    settings.ADMIN_TOKEN = token
    for finding in _scan(project):
        redaction.finding_redact(finding_id=finding.pk, reason="rotated", by="user:olga")
    skill = Skill.objects.get(pk=skill.pk)
    assert token not in skill.content and skill.verified
    assert skill.committed_hash == skill.recorded_hash != skill.content_hash
    submitted = StandardsImport.objects.get(pk=submitted.pk)
    assert token not in submitted.content
    assert submitted.sha256 != sha256_text(submitted.content)
    # The decision still binds to the bytes that were submitted.
    decision = submitted.accept(by="user:olga", sha256=submitted.sha256)
    assert decision.status == "accepted"
    # Still on the ledger's record, so still served as approved, with the notice.
    (served,) = served_imports(project)
    assert served.pk == submitted.pk and "[redacted by user:olga at " in served.content
    _verifies(project)


# --- bad input ---------------------------------------------------------------------------------


def _document_finding(project: Project, settings: Any) -> tuple[SecretFinding, str]:
    token = _token()
    document_put(project=project, path="CONTEXT.md", content=f"# C\n\nkey {token}\n",
                 author="cli")
    settings.ADMIN_TOKEN = token
    (finding,) = _scan(project)
    return finding, token


def _unchanged(project: Project) -> list[Any]:
    return [list(DocumentRevision.objects.filter(project=project).values_list("content")),
            TextRedaction.objects.count(), SecretFinding.objects.count(),
            list(ContextBundle.objects.values_list("text"))]


@pytest.mark.parametrize(("reason", "by", "error", "field"), [
    ("  ", "user:olga", ValidationError, "reason"),
    ("why", "", ValidationError, "by"),
    ("why", "x" * 65, ValidationError, "by"),
])
def test_bad_input_is_one_clear_error_and_changes_nothing(alpha, settings, reason, by, error,
                                                          field):
    finding, _ = _document_finding(alpha.project, settings)
    state = _unchanged(alpha.project)
    with pytest.raises(error) as raised:
        redaction.finding_redact(finding_id=finding.pk, reason=reason, by=by)
    assert field in raised.value.message_dict
    assert _unchanged(alpha.project) == state


def test_a_reason_holding_a_secret_is_refused(alpha, settings):
    finding, token = _document_finding(alpha.project, settings)
    state = _unchanged(alpha.project)
    with pytest.raises(SecretDetected):
        redaction.finding_redact(finding_id=finding.pk, reason=f"it was {token}", by="user:o")
    assert _unchanged(alpha.project) == state


def test_a_finding_that_no_longer_matches_the_stored_text_is_refused(alpha, settings):
    finding, _ = _document_finding(alpha.project, settings)
    SecretFinding.objects.filter(pk=finding.pk).update(offset=finding.offset + 1)
    state = _unchanged(alpha.project)
    with pytest.raises(InvalidState, match="no longer holds this gedweb-admin-token"):
        redaction.finding_redact(finding_id=finding.pk, reason="why", by="user:olga")
    assert _unchanged(alpha.project) == state


def test_a_finding_already_redacted_or_unknown_is_refused(alpha, settings):
    finding, _ = _document_finding(alpha.project, settings)
    redaction.finding_redact(finding_id=finding.pk, reason="why", by="user:olga")
    state = _unchanged(alpha.project)
    with pytest.raises(ValidationError, match="no secret finding"):
        redaction.finding_redact(finding_id=finding.pk, reason="why", by="user:olga")
    assert _unchanged(alpha.project) == state


def test_the_admin_page_says_what_is_wrong_and_changes_nothing(alpha, root, settings):
    finding, _ = _document_finding(alpha.project, settings)
    state = _unchanged(alpha.project)
    url = f"/admin/memory/secretfinding/{finding.pk}/redact/"
    page = root.post(url, {"confirm": "yes", "reason": " "})
    assert page.status_code == 200
    assert "say why the content is redacted" in page.content.decode()
    assert _unchanged(alpha.project) == state


# --- the triggers ------------------------------------------------------------------------------


def _raw(sql: str, params: list[Any]) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_the_triggers_let_exactly_the_recorded_cut_through_once(alpha, settings):
    finding, token = _document_finding(alpha.project, settings)
    revision = DocumentRevision.objects.get(project=alpha.project)
    # No record: refused.
    with pytest.raises(DatabaseError, match="append-only"):
        _raw("UPDATE memory_documentrevision SET content = %s WHERE id = %s",
             ["rewritten", revision.pk])
    record = redaction.finding_redact(finding_id=finding.pk, reason="why",
                                      by="user:olga").redaction
    stored = DocumentRevision.objects.get(pk=revision.pk)
    # The record does not let another text, a second cut, another column or DELETE through.
    for sql, params in [
        ("UPDATE memory_documentrevision SET content = %s WHERE id = %s",
         ["rewritten", revision.pk]),
        ("UPDATE memory_documentrevision SET content = %s WHERE id = %s",
         [stored.content[:record.cut_start] + record.notice
          + stored.content[record.cut_start + record.cut_length:], revision.pk]),
        ("UPDATE memory_documentrevision SET author = %s WHERE id = %s", ["eve", revision.pk]),
        ("UPDATE memory_documentrevision SET reason = %s WHERE id = %s", ["x", revision.pk]),
        ("DELETE FROM memory_documentrevision WHERE id = %s", [revision.pk]),
        ("UPDATE memory_textredaction SET reason = %s WHERE id = %s", ["x", record.pk]),
        ("DELETE FROM memory_textredaction WHERE id = %s", [record.pk]),
    ]:
        with pytest.raises(DatabaseError, match="append-only"):
            _raw(sql, params)
    assert DocumentRevision.objects.get(pk=revision.pk).content == stored.content
    assert token not in stored.content


def test_a_change_behind_gedwebs_back_after_a_redaction_is_found(alpha, settings):
    from tests.security.test_tamper import triggers_off

    finding, _ = _document_finding(alpha.project, settings)
    redaction.finding_redact(finding_id=finding.pk, reason="why", by="user:olga")
    revision = DocumentRevision.objects.get(project=alpha.project)
    assert ledger.ledger_verify(alpha.project)[1] == []
    tampered = revision.content.replace("key", "KEY")
    with triggers_off() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("DROP TRIGGER memory_documentrevision_refuse_update")
        cursor.execute("UPDATE memory_documentrevision SET content = %s WHERE id = %s",
                       [tampered, revision.pk])
        if connection.vendor == "sqlite":
            columns, cut = append_only.redactable_tables()["memory_documentrevision"]
            cursor.execute(append_only.sqlite_redactable_update(
                "memory_documentrevision", columns, cut))
    problems = ledger.ledger_verify(alpha.project)[1]
    assert problems and "document" in str(problems[0]).lower()


def test_a_record_gedweb_did_not_sign_explains_nothing(alpha, settings):
    """A role that may INSERT adds a record, then the UPDATE it allows: found, not explained."""
    finding, token = _document_finding(alpha.project, settings)
    revision = DocumentRevision.objects.get(project=alpha.project)
    secret_at = revision.content.index(token)
    forged_text = revision.content[:secret_at] + "[gone]" + revision.content[
        secret_at + len(token):]
    forged = TextRedaction.objects.create(
        project=alpha.project, source="document", row=finding.row, field="content",
        table_name="memory_documentrevision", row_id=revision.pk, column_name="content",
        cut_start=secret_at, cut_length=len(token), notice="[gone]",
        before_length=len(revision.content), before_sha256=sha256_text(revision.content),
        after_sha256=sha256_text(forged_text), kind=finding.kind,
        fingerprint=finding.fingerprint, reason="x", redacted_by="user:mallory",
        created_at=revision.created_at, mac="0" * 64, key_id="")
    # The database lets the described UPDATE through (it cannot check an HMAC) ...
    _raw("UPDATE memory_documentrevision SET content = %s WHERE id = %s",
         [forged_text, revision.pk])
    revision.refresh_from_db()
    # ... but nothing takes it for a redaction.
    assert redaction.committed_sha256(revision, "content") == sha256_text(forged_text)
    assert ledger.ledger_verify(alpha.project)[1]
    outcome = doctor.check_text_redactions(alpha.project)
    assert outcome.problems == [
        f"text redaction {forged.pk} (memory_documentrevision row {revision.pk}) fails its "
        "MAC: inserted behind GedWeb's back, or signed with a key this server no longer "
        "holds (key id none)"]


@pytest.mark.parametrize("module", ["memory.migrations.0025_textredaction",
                                    "governance.migrations.0015_text_redaction"])
def test_the_triggers_name_every_column_of_each_redactable_table(db, module):
    """On SQLite the UPDATE rule lists the columns; a column added later must join the list."""
    migration = importlib.import_module(module)
    with connection.cursor() as cursor:
        for table, (columns, redactable) in migration.REDACTABLE.items():
            actual = {column.name for column in connection.introspection.get_table_description(
                cursor, table)} - {"content_tsv"}
            assert set(columns) == actual, table
            assert set(redactable) <= actual
    if hasattr(migration, "BUNDLE_COLUMNS"):
        with connection.cursor() as cursor:
            actual = {column.name for column in connection.introspection.get_table_description(
                cursor, "governance_contextbundle")}
        assert set(migration.BUNDLE_COLUMNS) | {"text", "sections"} == actual


def test_every_scanned_source_has_a_redaction():
    from memory import secret_scan

    assert set(secret_scan.sources()) - {"entry"} <= set(redaction._REDACTABLE)


# --- the purge ---------------------------------------------------------------------------------


def test_the_purge_takes_the_bytes_out_of_the_database_files(live_db, make_project, settings):
    project = make_project("purged").project
    token = _token()
    document_put(project=project, path="CONTEXT.md", content=f"# C\n\nkey {token}\n",
                 author="cli")
    skill_put(project=project, name="deploy",
              content=f"---\nname: deploy\ndescription: Deploy it.\n---\n\nRun {token}\n",
              reason="needed", source=None, author="cli")
    settings.ADMIN_TOKEN = token
    results = [redaction.finding_redact(finding_id=finding.pk, reason="rotated", by="user:o")
               for finding in _scan(project)]
    assert len(results) == 2 and _scan(project) == []
    for result in results:
        assert isinstance(result, redaction.TextRedactionResult)
        if connection.vendor == "sqlite":
            assert result.purge["secure_delete"] and result.purge["wal_checkpoint"]["truncated"]
        else:
            assert result.purge["vacuum"] == "VACUUM memory_memoryentry"
            assert result.redaction.table_name in result.purge["tables"]
            assert "governance_contextbundle" in result.purge["tables"]
    if connection.vendor == "sqlite":
        database = Path(connection.settings_dict["NAME"])
        assert token.encode() not in database.read_bytes()
        wal = database.with_name(database.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM memory_documentrevision"
                           " WHERE content LIKE %s", [f"%{token}%"])
            assert cursor.fetchone()[0] == 0
    _verifies(project)


# --- the command -------------------------------------------------------------------------------


def test_the_command_redacts_a_finding_and_refuses_another_projects(alpha, beta, settings):
    finding, token = _document_finding(alpha.project, settings)
    with pytest.raises(CommandError, match=f"no secret finding {finding.pk} in project beta"):
        call_command("memory", "redact", "--project", "beta", "--finding", str(finding.pk),
                     "--reason", "rotated", stdout=StringIO())
    assert TextRedaction.objects.count() == 0
    out = StringIO()
    call_command("memory", "redact", "--project", "alpha", "--finding", str(finding.pk),
                 "--reason", "rotated", "--by", "cli:olga", stdout=out)
    shown = json.loads(out.getvalue())
    assert shown["redaction"]["source"] == "document" and shown["redaction"]["by"] == "cli:olga"
    assert (shown["redaction"]["path"], shown["redaction"]["revision"]) == ("CONTEXT.md", 1)
    assert token not in out.getvalue()
    assert token not in DocumentRevision.objects.get(project=alpha.project).content
    with pytest.raises(CommandError, match="no secret finding"):
        call_command("memory", "redact", "--project", "alpha", "--finding", str(finding.pk),
                     "--reason", "rotated", stdout=StringIO())


def test_an_entry_finding_outside_its_content_has_no_redaction_and_says_why(alpha, root):
    """An entry's source is hashed byte for byte (writes refuse a secret there; a row from
    before the rule could hold one): no link, a 404, and the service refuses, changing nothing."""
    from django.utils import timezone

    entry = services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                         content="plain").entry
    finding = SecretFinding.objects.create(
        project=alpha.project, source="entry", row={"seq": entry.seq}, seq=entry.seq,
        field="source", kind="github-token", rule_origin="gedweb", rule_version="2", line=1,
        column=1, offset=0, length=4, fingerprint="f" * 64, allowed=False,
        found_at=timezone.now())
    html = root.get("/admin/memory/secretfinding/").content.decode()
    assert f"none: entry #{entry.seq}&#x27;s source is part of its hash, byte for byte" in html
    assert root.get(f"/admin/memory/secretfinding/{finding.pk}/redact/").status_code == 404
    with pytest.raises(InvalidState, match="only an entry's content can be redacted"):
        redaction.finding_redact(finding_id=finding.pk, reason="why", by="user:olga")
    entry.refresh_from_db()
    assert entry.content == "plain" and SecretFinding.objects.filter(pk=finding.pk).exists()
