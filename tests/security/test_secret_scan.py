"""Secrets refused at the door, allowed by fingerprint, and found in what is stored (issue 22).

The scanner's rules and corpora run without a database; every write kind is
then refused through its own service (the one choke point every face calls),
the API answers 422 secret_detected without the secret, the imports name
every refused item, and `memory scan` lists what is already stored.
"""

from __future__ import annotations

import json
import re
import time
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
from memory.models import AllowedSecret, MemoryEntry, ProjectQuota
from tests.django_fixtures import bearer_client
from tests.governance.support import DIRECT, PLANNED, open_work
from tests.interop.gedpi_trees import migrated_checkout, write_tree
from tests.security.secret_corpus import (
    FAKES,
    KNOWN,
    REALISTIC,
    embeddings,
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
    texts = dict(enumerate(REALISTIC)) | realistic_pages()
    assert len(texts) > 30
    hits = [(name, f.kind, f.line) for name, text in texts.items()
            for f in scanner.scan("content", text)]
    assert hits == []


def test_every_fake_credential_is_caught_alone_in_prose_and_in_code():
    scanner = Scanner(KNOWN)
    cases = [(kind, secret, text) for kind, secret in [*FAKES, *KNOWN.items()]
             for text in embeddings(kind, secret)]
    missed = []
    for kind, secret, text in cases:
        found = [f for f in scanner.scan("content", text) if f.kind == kind]
        # At the secret's own position (its span overlaps the secret's), and the
        # finding never carries its text.
        start = text.index(secret)
        if not any(f.offset < start + len(secret) and start < f.offset + f.length
                   for f in found):
            missed.append((kind, text[:40]))
        assert all(secret not in json.dumps(f.as_dict()) for f in found)
    assert missed == []
    # Every kind the scanner knows has a fake.
    assert {kind for kind, _ in FAKES} | set(KNOWN) == set(secretscan.kinds())


@pytest.mark.parametrize(("pattern", "required"), [
    (r"(?:r|s)k_live_[0-9]{24}", "k_live_"),
    (r"(?:A3T[A-Z0-9]|ABIA|AKIA)[0-9A-Z]{16}", "A"),  # the alternatives' common start
    (r"ab(?:c|d)efg", "efg"),
    (r"x*yz", "yz"),
    (r"(gwp)_[a-z]{4}", "_"),
    (r"[0-9]{3}(?:-us)?", None),
    (r"(?i)xox[ab]-", None),  # a case-insensitive x also matches X
])
def test_the_text_a_rule_requires_is_a_literal_run_outside_groups_and_repeats(pattern,
                                                                            required):
    assert secretscan.required_text(re.compile(pattern)) == required


def test_every_match_of_every_rule_holds_the_text_the_rule_requires():
    """The gate that skips a rule never skips a text the rule would match."""
    texts = [text for kind, secret in [*FAKES, *KNOWN.items()]
             for text in [secret, *embeddings(kind, secret)]]
    matched = set()
    for kind, pattern, required in secretscan._RULES:
        for text in texts:
            for match in pattern.finditer(text):
                matched.add(kind)
                assert required is None or required in match.group(), (kind, pattern.pattern)
    # Every kind's fake was matched by one of its rules at least.
    assert matched == {kind for kind, _, _ in secretscan._RULES}


def test_a_finding_names_line_and_column_and_its_fingerprint_is_the_secrets():
    (finding,) = Scanner().scan("content", TEXT)
    assert (finding.field, finding.kind, finding.line, finding.column) == (
        "content", "AWS Access Key", 2, 28)
    assert TEXT.splitlines()[1][finding.column - 1:].startswith(AWS)
    assert finding.fingerprint == secretscan.fingerprint("AWS Access Key", AWS)
    # Another text with the same secret: the same fingerprint; another secret: another.
    assert Scanner().scan("x", f"key {AWS}")[0].fingerprint == finding.fingerprint
    assert Scanner().scan("x", "AKIAZZZZRTY5WXKZPLMB")[0].fingerprint != finding.fingerprint


def test_github_tokens_do_not_share_one_fingerprint():
    # detect-secrets reports the prefix group ("ghp") as the secret; the scanner takes the match.
    one, two = ("ghp_" + c * 36 for c in "ab")
    assert Scanner().scan("c", one)[0].fingerprint != Scanner().scan("c", two)[0].fingerprint


def test_short_configured_tokens_are_not_looked_for():
    assert Scanner({"GedWeb admin token": "admin"}).scan("c", "the admin page") == []


def test_placeholder_passwords_of_example_urls_are_not_reported():
    for url in ("postgres://user:password@db/x", "https://u:<password>@h/", "https://u:$PW@h/",
                "https://u:****@h/", "http://user:secret@host"):
        assert Scanner().scan("c", url) == [], url
    assert Scanner().scan("c", "https://u:hunter22@h/")[0].kind == "Basic Auth Credentials"


HOSTILE = {
    "jwt runs": "eyJ" * 333_333,
    "jwt segments": "eyJa." * 200_000,
    "openai prefixes": "sk-" * 333_333,
    "openai marks": "T3BlbkFJ" * 125_000,
    "npm marks": "//a/:_authToken=" * 62_500,
    "npm lines": "//a/:_authToken=\n" * 58_823,
    "assignment spaces": "ibm_cloud_iam_key" + " " * 1_000_000 + "!",
    "url separators": "://a:" * 200_000,
    "aws keywords": "aws key " * 125_000,
    "slack groups": "xoxb-" + "1-" * 500_000,
    "one character": "a" * 1_000_000,
    "newlines": "\n" * 1_000_000,
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_megabyte_is_scanned_in_linear_time(name):
    """1 MB of each rule's worst input is scanned in seconds, and 4x the input costs ~4x."""
    text = HOSTILE[name]
    quarter = text[: len(text) // 4]

    def timed(value: str) -> float:
        start = time.perf_counter()
        Scanner().scan("content", value)
        return time.perf_counter() - start

    small, large = min(timed(quarter) for _ in range(2)), min(timed(text) for _ in range(2))
    assert large < 15, f"{name}: {large:.1f} s for 1 MB"
    # Quadratic would be 16x; allow noise of a shared machine.
    assert large < 10 * small + 0.5, f"{name}: {small:.3f} s -> {large:.3f} s"


def test_the_largest_entry_is_scanned_in_bounded_time():
    worst = max(HOSTILE.values(), key=len)[:32_000]
    start = time.perf_counter()
    for text in HOSTILE.values():
        Scanner().scan("content", text[:32_000])
    assert time.perf_counter() - start < 2, worst[:0]


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
    assert finding == {"field": "content", "kind": "AWS Access Key", "line": 2, "column": 28,
                       "fingerprint": secretscan.fingerprint("AWS Access Key", AWS)}
    assert list(body["fields"]) == ["content"]
    assert "line 2, column 28" in body["message"]
    assert MemoryEntry.objects.count() == 0
    assert list(ProjectQuota.objects.values_list("used_bytes", flat=True)) == quota


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
    fingerprint = secretscan.fingerprint("AWS Access Key", AWS)
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
    assert "AWS Access Key at line 2, column 28" in message and AWS not in message
    assert "\n" not in message
    fingerprint = secretscan.fingerprint("AWS Access Key", AWS)
    shown = json.loads(command("memory", "allow-secret", "--project", "alpha", "--fingerprint",
                               fingerprint, "--reason", "example key", "--by", "vera"))
    assert (shown["fingerprint"], shown["allowed_by"]) == (fingerprint, "vera")
    command("memory", "add", "--project", "alpha", "--category", "note", "--content", TEXT)
    assert MemoryEntry.objects.count() == 1


def test_an_entries_import_names_every_refused_row_and_imports_nothing(alpha):
    from datetime import UTC, datetime

    rows = [services.ImportRow(key=f"k{n}", category="note", content=content, source="ferryman",
                               created_at=datetime(2026, 1, 1, tzinfo=UTC), label=f"row {n}")
            for n, content in enumerate(["fine", TEXT, "fine too", "token xoxb-1-2-abc"])]
    error = refusal(lambda: services.memory_entries_import(project=alpha.project, rows=rows))
    assert error.message.startswith("2 of 4 entries refused: secret detected")
    assert "row 1: content: AWS Access Key at line 2" in error.message
    assert "row 3: content: Slack Token" in error.message
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
    assert "1 of 2 entries refused" in message and "AWS Access Key" in message
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
    assert ".ged/PROJECT.md: content: AWS Access Key" in error.message
    assert f"{handoff}: content: Slack Token" in error.message


def test_memory_scan_lists_stored_secrets_without_their_text(alpha, settings):
    # Text stored before its secret was known: a token configured later.
    later = "rotated-admin-token-0123456789abcdef"
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=f"first\nthe new admin token is {later}")
    document_put(project=alpha.project, path="CONTEXT.md", content=f"# Context\n\n{later}\n",
                 author="cli")
    fingerprint = secretscan.fingerprint("AWS Access Key", AWS)
    secret_scan.secret_allow(project=alpha.project, fingerprint=fingerprint, reason="example",
                             by="vera")
    services.memory_entry_create(project=alpha.project, author="cli", category="note",
                                 content=TEXT)
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
    found = {(line["source"], line.get("seq"), line.get("path"), line["kind"], line["line"],
              line["allowed"]) for line in lines[:-1]}
    assert found == {
        ("entry", 1, None, "GedWeb admin token", 2, False),
        ("entry", 2, None, "AWS Access Key", 2, True),
        ("document", None, "CONTEXT.md", "GedWeb admin token", 3, False),
    }
    assert lines[-1] == {"scanned": ["alpha"], "findings": 3, "not_allowed": 2}


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
        "work_file", "DIRECT.md", 2, "GedWeb memory write token")
    assert summary["not_allowed"] == 1


def test_an_operator_allows_a_finding_in_the_admin_as_themselves(alpha, admin_user):
    from django.test import Client

    client = Client()
    client.force_login(admin_user)
    fingerprint = secretscan.fingerprint("AWS Access Key", AWS)
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
