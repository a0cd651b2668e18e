"""Secrets refused at the door, allowed by fingerprint, and found in what is stored (issue 22).

The scanner's rules and corpora run without a database; every write kind is
then refused through its own service (the one choke point every face calls),
the API answers 422 secret_detected without the secret, the imports name
every refused item, and `memory scan` lists what is already stored.
"""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from gedweb import secretscan
from gedweb.errors import SecretDetected
from gedweb.secretscan import Scanner
from governance import services as gov_services
from governance.gedpi_import import import_checkout
from governance.skills import skill_put
from governance.standards import standards_import_submit
from memory import secret_scan, services
from memory.documents import document_put
from memory.models import AllowedSecret, MemoryEntry, ProjectQuota, SecretFinding
from tests.django_fixtures import bearer_client
from tests.governance.support import DIRECT, PLANNED, open_work
from tests.interop.gedpi_trees import migrated_checkout, write_tree
from tests.security.secret_corpus import (
    HOSTILE,
    KNOWN,
    Credential,
    credentials,
    embeddings,
    realistic_corpus,
    realistic_pages,
)

AWS = "AKIAQ3EGRTY5WXKZPLMB"
TEXT = f"Deploy notes.\n  export AWS_ACCESS_KEY_ID={AWS}\nDone."


def everything() -> dict[str, list[dict[str, Any]]]:
    """Every row of every GedWeb table: a refusal must leave all of them as they were."""
    models = [model for label in ("memory", "governance")
              for model in apps.get_app_config(label).get_models()]
    return {model._meta.label: list(model.objects.order_by("pk").values()) for model in models}


# --- the rules, without a database -----------------------------------------------------------


def test_the_realistic_corpus_gives_no_finding():
    scanner = Scanner(KNOWN)
    entries = realistic_corpus()
    assert len(entries) >= 500
    texts = dict(enumerate(entries)) | realistic_pages()
    hits = [(name, f.kind, f.line) for name, text in texts.items()
            for f in scanner.scan("content", text)]
    assert hits == []


def _missed(scanner: Scanner, made: list[Credential]) -> list[tuple[str, str]]:
    """The credentials no finding covers, alone, in prose or in code."""
    missed = []
    for credential in made:
        for text in embeddings(credential):
            found = scanner.scan("content", text)
            # At the secret's own position (a finding's span overlaps it), and no
            # finding carries its text.
            start = text.index(credential.secret)
            end = start + len(credential.secret)
            if not any(f.offset < end and start < f.offset + f.length for f in found):
                missed.append((credential.format, text[:60]))
            assert all(credential.secret not in json.dumps(f.as_dict()) for f in found)
    return missed


def test_a_fresh_credential_of_every_format_is_caught_alone_in_prose_and_in_code():
    made = credentials(random.Random(35))
    assert len(made) >= 60
    assert _missed(Scanner(KNOWN), made) == []


@pytest.mark.parametrize("seed", range(1, 6))
def test_other_fresh_credentials_of_every_format_are_caught_too(seed):
    assert _missed(Scanner(KNOWN), credentials(random.Random(seed * 7919))) == []


def test_the_configured_tokens_are_caught_as_literal_text():
    scanner = Scanner(KNOWN)
    for kind, token in KNOWN.items():
        (finding,) = scanner.scan("content", f"the token is {token}, keep it")
        assert (finding.kind, finding.offset, finding.length) == (kind, 13, len(token))


def test_the_issue_formats_are_each_caught_by_a_rule_that_names_them():
    """The shapes issue 35 found stored with 201, each refused and named."""
    scanner = Scanner()
    rng = random.Random(3535)
    by_format = {credential.format: credential for credential in credentials(rng)}
    expected = {
        "anthropic api key": "anthropic-key", "openai project key": "openai-api-key-plain",
        "openai legacy key (48 characters)": "openai-api-key-plain",
        "github fine-grained token": "github-token", "google api key": "google-api-key",
        "hugging face token": "huggingface-token",
        "aws secret key (export)": "aws-secret-access-key",
        "aws secret key (~/.aws/credentials)": "aws-secret-access-key",
        "redis url password": "database-url-password", "libpq password": "libpq-password",
        "pgpass line": "pgpass-line",
        "encrypted pkcs8 private key": ("private-key", "private-key-block"),
        "docker config.json auth": "docker-config-auth",
        "authorization bearer header": "authorization-header",
        "netrc password": "netrc-password", "basic-auth url": "basic-auth-url",
        "mongodb+srv url password": "database-url-password",
        "gcp service-account json": "gcp-service-account-key-id",
    }
    for name, kind in expected.items():
        credential = by_format[name]
        kinds = {f.kind for f in scanner.scan("content", credential.shown)}
        assert kinds & ({kind} if isinstance(kind, str) else set(kind)), (name, kinds)


def test_a_secret_behind_invisible_or_compatibility_characters_is_found_where_it_is_written():
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    disguised = token[:10] + "\u200b" + token[10:20] + "\u2060\ufeff" + token[20:]
    text = "Notes, \u00e9t\u00e9 2026.\nkey: " + disguised + " (rotate)"
    (finding,) = Scanner().scan("content", text)
    # The span is the disguised token as written: from its first character to its last.
    assert text[finding.offset:finding.offset + finding.length] == disguised
    assert (finding.line, finding.column) == (2, 6)
    # The fingerprint is the token's: disguising it does not make it another secret.
    assert finding.fingerprint == Scanner().scan("content", token)[0].fingerprint
    wide = "".join(chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in token)
    (finding,) = Scanner().scan("content", f"x {wide} y")
    assert (finding.offset, finding.length) == (2, len(wide))
    assert finding.fingerprint == Scanner().scan("content", token)[0].fingerprint


def test_the_normalised_view_maps_every_character_back():
    text = "a\u200bb\ufb01c\uff21\u00e9\u0301d"  # zero-width, ligature fi, fullwidth A
    view = secretscan.normalise(text)
    assert view.text == "abficA\u00e9\u0301d"
    assert view.original(0, 2) == (0, 3)  # "ab" spans the zero-width space
    assert view.original(2, 4) == (3, 4)  # both letters of "fi" come from the ligature
    assert view.original(5, 6) == (5, 6)  # fullwidth A
    assert view.original(len(view.text) - 1, len(view.text)) == (len(text) - 1, len(text))
    assert secretscan.normalise("plain ascii").sources is None


def test_a_finding_names_line_and_column_and_its_fingerprint_is_the_secrets():
    (finding,) = Scanner().scan("content", TEXT)
    assert (finding.field, finding.kind, finding.line, finding.column) == (
        "content", "aws-access-key-id", 2, 28)
    assert TEXT.splitlines()[1][finding.column - 1:].startswith(AWS)
    assert finding.fingerprint == secretscan.fingerprint("aws-access-key-id", AWS)
    # Another text with the same secret: the same fingerprint; another secret: another.
    assert Scanner().scan("x", f"key {AWS}")[0].fingerprint == finding.fingerprint
    assert Scanner().scan("x", "AKIAZZZZRTY5WXKZPLMB")[0].fingerprint != finding.fingerprint


def test_github_tokens_do_not_share_one_fingerprint():
    one, two = ("ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z" + tail for tail in ("A5", "B6"))
    assert Scanner().scan("c", one)[0].fingerprint != Scanner().scan("c", two)[0].fingerprint


def test_short_configured_tokens_are_not_looked_for():
    assert Scanner({"gedweb-admin-token": "admin"}).scan("c", "the admin page") == []


def test_placeholder_passwords_of_example_urls_are_not_reported():
    for url in ("postgres://user:password@db/x", "https://u:<password>@h/", "https://u:$PW@h/",
                "https://u:****@h/", "http://user:secret@host", "redis://:${REDIS_PW}@r:6379",
                "amqp://guest:guest@localhost:5672/"):
        assert Scanner().scan("c", url) == [], url
    assert Scanner().scan("c", "https://u:hunter22@h/")[0].kind == "basic-auth-url"
    assert Scanner().scan("c", "redis://:hunter22@h/")[0].kind == "database-url-password"


def test_a_text_holding_many_secrets_reports_the_first_thousand():
    text = " ".join(f"ghp_{random.Random(n).getrandbits(180):036x}"[:40] for n in range(1500))
    found = Scanner().scan("content", text)
    assert len(found) == secretscan.MAX_FINDINGS
    assert found[0].offset == 0




@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_megabyte_is_scanned_to_the_same_answer_as_its_quarter(name):
    """1 MB of each rule's worst input is scanned, and finds what its first quarter finds.

    Its time, and that 4x the input costs about 4x, are bench/secret_scan.py's
    (`make bench`); a hang fails on the suite's timeout.
    """
    text = HOSTILE[name]
    quarter = text[: len(text) // 4]

    def kinds(value: str) -> set[str]:
        return {finding.kind for finding in Scanner().scan("content", value)}

    assert kinds(text) == kinds(quarter)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_secret_after_a_hostile_megabyte_is_still_found(name):
    """The RE2 sets that pick the rules answer on a hostile megabyte too: none gives up."""
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    text = HOSTILE[name] + "\n" + token
    found = Scanner().scan("content", text)
    # A megabyte that is itself a thousand findings is refused before the token is reached.
    assert len(found) == secretscan.MAX_FINDINGS or any(
        f.kind == "github-token" and f.offset == len(text) - len(token) for f in found), name


# --- at the door: every write kind, through its service --------------------------------------


def refusal(call: Any) -> SecretDetected:
    before = everything()
    with pytest.raises(SecretDetected) as raised:
        call()
    assert everything() == before  # nothing stored, nothing half-written
    assert AWS not in raised.value.message and AWS not in json.dumps(raised.value.extra)
    return raised.value


def test_an_api_append_holding_a_secret_is_422_and_stores_nothing(alpha):
    api = bearer_client(alpha.token)
    quota = list(ProjectQuota.objects.values_list("used_bytes", flat=True))
    response = api.post(f"/v1/projects/{alpha.id}/memory",
                        {"category": "note", "content": TEXT}, format="json")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "secret_detected"
    assert AWS not in response.content.decode()
    (finding,) = body["findings"]
    assert finding == {"field": "content", "kind": "aws-access-key-id", "line": 2, "column": 28,
                       "fingerprint": secretscan.fingerprint("aws-access-key-id", AWS)}
    assert list(body["fields"]) == ["content"]
    assert "line 2, column 28" in body["message"]
    assert MemoryEntry.objects.count() == 0
    assert list(ProjectQuota.objects.values_list("used_bytes", flat=True)) == quota


def test_an_api_append_of_a_token_split_by_a_zero_width_space_is_refused_where_written(alpha):
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    content = "Deploy \u00e9t\u00e9.\n\u00a0 key " + token[:12] + "\u200b" + token[12:]
    api = bearer_client(alpha.token)
    response = api.post(f"/v1/projects/{alpha.id}/memory",
                        {"category": "note", "content": content}, format="json")
    assert response.status_code == 422
    (finding,) = response.json()["findings"]
    assert (finding["kind"], finding["line"], finding["column"]) == ("github-token", 2, 7)
    assert token[12:] not in response.content.decode()
    assert MemoryEntry.objects.count() == 0


def test_an_api_document_and_candidate_holding_a_secret_are_refused(alpha):
    api = bearer_client(alpha.token)
    put = api.put(f"/v1/projects/{alpha.id}/documents/adr/0001-keys.md",
                  {"content": "# Keys\n\n" + TEXT}, format="json")
    assert (put.status_code, put.json()["findings"][0]["line"]) == (422, 4)
    posted = api.post(f"/v1/projects/{alpha.id}/memory/candidates",
                      {"category": "note", "content": "ok", "source": f"agent {AWS}"},
                      format="json")
    assert (posted.status_code, posted.json()["findings"][0]["field"]) == (422, "source")


def test_every_service_that_stores_text_refuses_a_secret(alpha):
    project = alpha.project
    direct, planned = open_work(project, DIRECT), open_work(project, PLANNED)
    calls = {
        "entry": lambda: services.memory_entry_create(
            project=project, author="cli", category="note", content=TEXT),
        "candidate": lambda: services.candidate_create(
            project=project, author="cli", category="note", content=TEXT),
        "document": lambda: document_put(project=project, path="CONTEXT.md",
                                         content="# Context\n\n" + TEXT, author="cli"),
        "document reason": lambda: document_put(project=project, path="CONTEXT.md",
                                                content="# Context\n\nText.\n", author="cli",
                                                reason=TEXT),
        "standards": lambda: standards_import_submit(project=project, path="AGENTS.md",
                                                     content="# Rules\n\n" + TEXT, author="cli"),
        "skill": lambda: skill_put(
            project=project, name="deploy",
            content=f"---\nname: deploy\ndescription: Deploy it.\n---\n\n{TEXT}\n",
            reason="needed", source=None, author="cli"),
        "work file": lambda: gov_services.work_file_write(
            work=direct, name="DIRECT.md", content=TEXT, author="cli"),
        "task artifact": lambda: gov_services.task_artifact_write(
            work=planned, task_id="T1", name="BRIEF.md", content=TEXT, author="cli"),
        "evidence": lambda: gov_services.evidence_append(
            work=direct, expected_revision=gov_services.latest_revision(direct).revision,
            evidence={"kind": "verification", "source": "agent", "summary": TEXT,
                      "outcome": "observed"},
            policy="none", author="cli"),
        "work summary": lambda: gov_services.work_open(
            project=project, author="cli", **{**DIRECT, "summary": f"Rotate {AWS} now"}),
    }
    fields = {name: refusal(call).extra["findings"][0]["field"] for name, call in calls.items()}
    assert fields["document reason"] == "reason"
    assert fields["evidence"] == "governance.evidence.0.summary"
    assert fields["work summary"] == "governance.summary"
    assert fields["entry"] == fields["work file"] == "content"


def test_an_allowed_finding_no_longer_refuses_and_only_in_its_project(alpha, beta):
    fingerprint = secretscan.fingerprint("aws-access-key-id", AWS)
    record = secret_scan.secret_allow(project=alpha.project, fingerprint=fingerprint,
                                      reason="AWS's documented example key", by="user:vera")
    assert (record.allowed_by, record.reason) == ("user:vera", "AWS's documented example key")
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=TEXT)
    refusal(lambda: services.memory_entry_create(project=beta.project, author="cli",
                                                 category="note", content=TEXT))
    # Another secret in the same text still refuses it.
    refusal(lambda: services.memory_entry_create(
        project=alpha.project, author="cli", category="note",
        content=TEXT + " ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"))


@pytest.mark.parametrize("fingerprint, reason, field", [
    ("AKIA" + "0" * 60, "why", "fingerprint"), ("0" * 63, "why", "fingerprint"),
    ("0" * 64, "  ", "reason"), ("0" * 64, "x" * 1001, "reason"),
])
def test_a_bad_allowance_is_refused_naming_the_field(alpha, fingerprint, reason, field):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as raised:
        secret_scan.secret_allow(project=alpha.project, fingerprint=fingerprint, reason=reason,
                                 by="user:vera")
    assert list(raised.value.message_dict) == [field]
    assert AllowedSecret.objects.count() == 0


def test_an_allowance_is_recorded_once_and_never_changed(alpha):
    from gedweb.append_only import AppendOnlyError
    from gedweb.errors import Conflict

    record = secret_scan.secret_allow(project=alpha.project, fingerprint="a" * 64,
                                      reason="fixture", by="user:vera")
    with pytest.raises(Conflict):
        secret_scan.secret_allow(project=alpha.project, fingerprint="a" * 64, reason="again",
                                 by="user:max")
    with pytest.raises(AppendOnlyError):
        AllowedSecret.objects.filter(pk=record.pk).update(reason="changed")
    with pytest.raises(AppendOnlyError):
        record.delete()


# --- commands and imports --------------------------------------------------------------------


def command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_memory_add_refuses_in_one_line_and_allow_secret_lets_it_in(alpha):
    with pytest.raises(CommandError) as raised:
        command("memory", "add", "--project", "alpha", "--category", "note", "--content", TEXT)
    message = str(raised.value)
    assert "aws-access-key-id at line 2, column 28" in message and AWS not in message
    assert "\n" not in message
    fingerprint = secretscan.fingerprint("aws-access-key-id", AWS)
    shown = json.loads(command("memory", "allow-secret", "--project", "alpha", "--fingerprint",
                               fingerprint, "--reason", "example key", "--by", "vera"))
    assert (shown["fingerprint"], shown["allowed_by"]) == (fingerprint, "vera")
    command("memory", "add", "--project", "alpha", "--category", "note", "--content", TEXT)
    assert MemoryEntry.objects.count() == 1


def test_an_entries_import_names_every_refused_row_and_imports_nothing(alpha):
    from datetime import UTC, datetime

    rows = [services.ImportRow(key=f"k{n}", category="note", content=content, source="ferryman",
                               created_at=datetime(2026, 1, 1, tzinfo=UTC), label=f"row {n}")
            for n, content in enumerate(["fine", TEXT, "fine too",
                                         "token xoxb-123456789012-1234567890123-AbCdEfGhIjKl"])]
    error = refusal(lambda: services.memory_entries_import(project=alpha.project, rows=rows))
    assert error.message.startswith("2 of 4 entries refused: secret detected")
    assert "row 1: content: aws-access-key-id at line 2" in error.message
    assert "row 3: content: slack-token" in error.message
    assert [item["item"] for item in error.extra["items"]] == ["row 1", "row 3"]


def test_ferryman_import_says_how_many_entries_were_refused_and_why(alpha, tmp_path):
    from tests.interop.test_ferryman_import import make_mirror

    mirror = make_mirror(tmp_path / "MEMORY.md", [
        ("r1", "decision", "Use SQLite.", "agent", "2026-01-01T10:00:00Z"),
        ("r2", "note", TEXT, "agent", "2026-01-01T10:01:00Z"),
    ])
    with pytest.raises(CommandError) as raised:
        command("ferryman_import", "--project", "alpha", "--mirror", str(mirror))
    message = str(raised.value)
    assert "1 of 2 entries refused" in message and "aws-access-key-id" in message
    assert AWS not in message and MemoryEntry.objects.count() == 0


def test_ged_import_names_every_checkout_file_holding_a_secret(alpha, tmp_path):
    files = migrated_checkout()
    files[".ged/PROJECT.md"] = files[".ged/PROJECT.md"] + f"\nKey: {AWS}\n".encode()
    handoff = next(rel for rel in files if rel.startswith(".ged/work/")
                   and rel.endswith("DIRECT.md"))
    files[handoff] = files[handoff] + b"\nslack xoxb-123456789012-1234567890123-AbCdEf\n"
    root = write_tree(tmp_path / "src", files)
    error = refusal(lambda: import_checkout(project=alpha.project, root=Path(root)))
    assert error.message.startswith("2 of ")
    assert ".ged/PROJECT.md: content: aws-access-key-id" in error.message
    assert f"{handoff}: content: slack-token" in error.message


def test_memory_scan_lists_stored_secrets_without_their_text(alpha, settings):
    # Text stored before its secret was known: a token configured later.
    later = "rotated-admin-token-0123456789abcdef"
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=f"first\nthe new admin token is {later}")
    document_put(project=alpha.project, path="CONTEXT.md", content=f"# Context\n\n{later}\n",
                 author="cli")
    fingerprint = secretscan.fingerprint("aws-access-key-id", AWS)
    secret_scan.secret_allow(project=alpha.project, fingerprint=fingerprint, reason="example",
                             by="vera")
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=TEXT)
    # An Idempotency-Key is stored as its digest only (issue 34 §10): nothing to find there.
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content="third", idempotency_key=f"retry-{later}")
    stored_key = MemoryEntry.objects.get(project=alpha.project, seq=3).idempotency_key
    assert stored_key is not None and later not in stored_key
    settings.ADMIN_TOKEN = later
    with pytest.raises(CommandError) as raised:
        command("memory", "scan", "--project", "alpha")
    assert raised.value.returncode == 1
    assert "2 stored secret(s) not allowed" in str(raised.value)
    out = StringIO()
    with pytest.raises(CommandError):
        call_command("memory", "scan", "--project", "alpha", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert later not in out.getvalue() and AWS not in out.getvalue()
    found = {(line["source"], line.get("seq"), line.get("path"), line["field"], line["kind"],
              line["line"], line["allowed"]) for line in lines[:-1]}
    assert found == {
        ("entry", 1, None, "content", "gedweb-admin-token", 2, False),
        ("entry", 2, None, "content", "aws-access-key-id", 2, True),
        ("document", None, "CONTEXT.md", "content", "gedweb-admin-token", 3, False),
    }
    aws = next(line for line in lines[:-1] if line["kind"] == "aws-access-key-id")
    assert (aws["rule_origin"], aws["rule_version"]) == ("gedweb", "2")
    assert lines[-1] == {"scanned": ["alpha"], "findings": 3, "not_allowed": 2}
    # Kept for the admin: one row per finding, where it is and which rule found it.
    rows = {(f.source, f.seq, f.field, f.kind, f.line, f.column, f.offset, f.length, f.allowed)
            for f in SecretFinding.objects.filter(project=alpha.project)}
    assert rows == {
        ("entry", 1, "content", "gedweb-admin-token", 2, 24, 29, len(later), False),
        ("entry", 2, "content", "aws-access-key-id", 2, 28, 41, 20, True),
        ("document", None, "content", "gedweb-admin-token", 3, 1, 11, len(later), False),
    }
    assert not SecretFinding.objects.filter(fingerprint="").exists()


def test_a_new_scan_replaces_the_projects_findings_and_leaves_others(alpha, beta, settings):
    later = "rotated-admin-token-0123456789abcdef"
    for target in (alpha, beta):
        services.memory_entry_create(project=target.project, author="cli", category="note",
                                     content=f"token {later}")
    settings.ADMIN_TOKEN = later
    with pytest.raises(CommandError):
        command("memory", "scan")
    assert SecretFinding.objects.count() == 2
    first = set(SecretFinding.objects.values_list("pk", flat=True))
    settings.ADMIN_TOKEN = "another-admin-token-0123456789abcdef"
    command("memory", "scan", "--project", "alpha")  # nothing found: exit 0
    assert list(SecretFinding.objects.values_list("project_id", flat=True)) == ["beta"]
    assert set(SecretFinding.objects.values_list("pk", flat=True)) < first


def test_memory_scan_reads_governance_tables_too(alpha, settings):
    later = "rotated-memory-token-0123456789abcdef"
    work = open_work(alpha.project, DIRECT)
    gov_services.work_file_write(work=work, name="DIRECT.md", content=f"x {later}", author="cli")
    settings.MEMORY_WRITE_TOKEN = later
    out = StringIO()
    with pytest.raises(CommandError, match=r"^1 stored secret\(s\) not allowed"):
        call_command("memory", "scan", stdout=out)
    (hit, summary) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (hit["source"], hit["name"], hit["version"], hit["kind"]) == (
        "work_file", "DIRECT.md", 2, "gedweb-memory-write-token")
    assert summary["not_allowed"] == 1


def test_an_operator_allows_a_finding_in_the_admin_as_themselves(alpha, admin_user):
    from django.test import Client

    client = Client()
    client.force_login(admin_user)
    fingerprint = secretscan.fingerprint("aws-access-key-id", AWS)
    bad = client.post("/admin/memory/allowedsecret/add/",
                      {"project": "alpha", "fingerprint": "AKIA", "reason": " "})
    assert bad.status_code == 200 and AllowedSecret.objects.count() == 0
    added = client.post("/admin/memory/allowedsecret/add/",
                        {"project": "alpha", "fingerprint": fingerprint, "reason": "example"})
    assert added.status_code == 302
    (record,) = AllowedSecret.objects.all()
    assert (record.fingerprint, record.allowed_by) == (fingerprint, f"user:{admin_user.username}")
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=TEXT)
