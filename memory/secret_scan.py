"""Secrets refused at the door, allowed by fingerprint, and found in what is stored (issue 22).

The scanner is gedweb.secretscan (gitleaks' rule set and GedWeb's own, on
RE2, over a normalised view of the text); this module gives it the
server's configured tokens and the project's allowances:

- ``refuse_secrets(project, fields)``: every service that stores agent or
  user text calls it with the fields it is about to store (entries and
  candidates, documents, work files, task artifacts, evidence and
  governance revisions, standards imports, skills), so the API, the admin,
  the pages, the commands, the imports, the MCP tools and the CLI all get
  the same refusal: ``SecretDetected`` (422 ``secret_detected``), naming
  the field, the kind and the position, never the secret; the service has
  stored nothing yet, and its transaction rolls back whatever it had.
- ``items_refused``: the imports' form, one refusal naming every item.
- ``secret_allow``: an operator's allowance of one finding in one project
  (memory.AllowedSecret); an allowed finding no longer refuses a write.
- ``scan_project``: what is already stored, for `manage.py memory scan`
  (``record_findings`` keeps it in memory.SecretFinding for the admin).
  Each hit names its row (seq, path and revision, ...), its field and the
  finding's offset and length, so a later redaction can cut exactly that
  span. Governance registers its own tables (``register_source``), since
  memory never imports governance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from gedweb.errors import Conflict, SecretDetected
from gedweb.lib.ids import is_hex64
from gedweb.secretrules import GEDWEB_RULES_VERSION, RULES_BY_ID
from gedweb.secretscan import (
    ADMIN_TOKEN,
    MEMORY_WRITE_TOKEN,
    Finding,
    Scanner,
    json_strings,
    new_json_strings,
)
from gedweb.validation import collect_errors, validate_text
from memory.models import (
    AllowedSecret,
    DocumentRevision,
    MemoryCandidate,
    MemoryEntry,
    Project,
    SecretFinding,
)

# A refusal names at most this many findings (the body's ``findings`` and its
# message); ``findings_total`` counts them all. A hostile text can hold
# thousands; the answer stays small.
MAX_REPORTED = 20
MAX_REASON_CHARS = 1000
ALLOW_HINT = "an operator can allow a finding by its fingerprint (manage.py memory allow-secret)"

ProjectRef = Project | str


def scanner() -> Scanner:
    """The scanner with this server's tokens (read each time: tests and reloads change them)."""
    return Scanner({ADMIN_TOKEN: settings.ADMIN_TOKEN,
                    MEMORY_WRITE_TOKEN: settings.MEMORY_WRITE_TOKEN})


def _project_id(project: ProjectRef) -> str:
    return project if isinstance(project, str) else project.pk


def allowed(project: ProjectRef, fingerprints: Iterable[str]) -> set[str]:
    wanted = set(fingerprints)
    if not wanted:
        return set()
    return set(AllowedSecret.objects.filter(
        project_id=_project_id(project), fingerprint__in=wanted,
    ).values_list("fingerprint", flat=True))


def not_allowed(project: ProjectRef, findings: list[Finding]) -> list[Finding]:
    """The findings no allowance of the project covers (a query only when there are any)."""
    if not findings:
        return []
    ok = allowed(project, (finding.fingerprint for finding in findings))
    return [finding for finding in findings if finding.fingerprint not in ok]


def findings_in(project: ProjectRef, fields: Mapping[str, str | None]) -> list[Finding]:
    return not_allowed(project, scanner().scan_fields(fields))


def json_fields(before: Any, after: Any, prefix: str) -> dict[str, str | None]:
    """The strings a JSON document adds to ``before`` (all of them when it is None), by path."""
    return dict(new_json_strings(before, after, prefix))


def _listed(findings: list[Finding]) -> str:
    shown = "; ".join(finding.describe() for finding in findings[:MAX_REPORTED])
    more = len(findings) - MAX_REPORTED
    return shown + (f"; and {more} more" if more > 0 else "")


def secret_error(findings: list[Finding]) -> SecretDetected:
    shown = findings[:MAX_REPORTED]
    fields: dict[str, list[str]] = {}
    for finding in shown:
        fields.setdefault(finding.field, []).append(
            f"holds a secret: {finding.kind} at line {finding.line}, column {finding.column} "
            f"(fingerprint {finding.fingerprint})")
    return SecretDetected(
        f"secret detected, nothing was stored: {_listed(findings)}; {ALLOW_HINT}",
        fields=fields, findings=[finding.as_dict() for finding in shown],
        findings_total=len(findings),
    )


def refuse_secrets(project: ProjectRef, fields: Mapping[str, str | None]) -> None:
    """Raise SecretDetected if a field holds a secret the project has not allowed."""
    found = findings_in(project, fields)
    if found:
        raise secret_error(found)


def items_refused(refused: list[tuple[str, list[Finding]]], total: int,
                  noun: str) -> SecretDetected:
    """One refusal for an import: how many of its ``total`` items hold secrets, and each."""
    shown = refused[:MAX_REPORTED]
    lines = "; ".join(f"{label}: {_listed(found)}" for label, found in shown)
    more = len(refused) - MAX_REPORTED
    return SecretDetected(
        f"{len(refused)} of {total} {noun} refused: secret detected, nothing was imported: "
        f"{lines}{f'; and {more} more' if more > 0 else ''}; {ALLOW_HINT}",
        refused=len(refused),
        items=[{"item": label, "findings": [f.as_dict() for f in found[:MAX_REPORTED]]}
               for label, found in shown],
    )


def refuse_items(project: ProjectRef, items: Iterable[tuple[str, Mapping[str, str | None]]],
                 noun: str) -> None:
    """Scan every item of an import first; refuse them all together, naming each."""
    refused = []
    total = 0
    for label, fields in items:
        total += 1
        found = findings_in(project, fields)
        if found:
            refused.append((label, found))
    if refused:
        raise items_refused(refused, total, noun)


# --- allowances -------------------------------------------------------------------------------


def validate_fingerprint(value: str) -> None:
    if not is_hex64(value):
        raise ValidationError("must be a finding's fingerprint: 64 lowercase hex characters")


def validate_allow_reason(value: str) -> None:
    if len(value) > MAX_REASON_CHARS:
        raise ValidationError(f"must be at most {MAX_REASON_CHARS:,} characters")
    validate_text(value, blank_message="must say why the finding is not a secret")


def secret_allow(*, project: Project, fingerprint: str, reason: str, by: str) -> AllowedSecret:
    """Allow one finding in one project: recorded once, with who and why, never changed."""
    collect_errors({
        "fingerprint": (validate_fingerprint, fingerprint),
        "reason": (validate_allow_reason, reason),
    })
    if not by or len(by) > 150:
        raise ValidationError({"allowed_by": ["must name who allows it (1-150 characters)"]})
    existing = AllowedSecret.objects.filter(project=project, fingerprint=fingerprint).first()
    if existing is not None:
        raise Conflict(f"fingerprint {fingerprint} is already allowed in project {project.pk} "
                       f"(by {existing.allowed_by})")
    try:
        with transaction.atomic():
            return AllowedSecret.objects.create(
                project=project, fingerprint=fingerprint, reason=reason.strip(),
                allowed_by=by, created_at=timezone.now(),
            )
    except IntegrityError:
        raise Conflict(f"fingerprint {fingerprint} is already allowed in project "
                       f"{project.pk}") from None


# --- what is already stored -------------------------------------------------------------------

# A source yields, for one project, each stored row as (what names it, its
# fields' texts). Memory's own are below; governance adds its tables.
Source = Callable[[Project], Iterator[tuple[dict[str, Any], Mapping[str, str | None]]]]
_SOURCES: dict[str, Source] = {}
BATCH = 500


def register_source(name: str, source: Source) -> None:
    """Have ``memory scan`` read ``source`` too (idempotent, by name)."""
    _SOURCES[name] = source


def sources() -> dict[str, Source]:
    return dict(_SOURCES)


def _entries(project: Project) -> Iterator[tuple[dict[str, Any], Mapping[str, str | None]]]:
    rows = (MemoryEntry.objects.filter(project=project).order_by("seq")
            .values_list("seq", "content", "source", "idempotency_key"))
    for seq, content, source, key in rows.iterator(chunk_size=BATCH):
        yield {"seq": seq}, {"content": content, "source": source, "idempotency_key": key}


def _candidates(project: Project) -> Iterator[tuple[dict[str, Any], Mapping[str, str | None]]]:
    rows = (MemoryCandidate.objects.filter(project=project).order_by("created_at", "id")
            .values_list("id", "status", "content", "source", "idempotency_key"))
    for ident, status, content, source, key in rows.iterator(chunk_size=BATCH):
        yield ({"id": str(ident), "status": status},
               {"content": content, "source": source, "idempotency_key": key})


def _documents(project: Project) -> Iterator[tuple[dict[str, Any], Mapping[str, str | None]]]:
    rows = (DocumentRevision.objects.filter(project=project).order_by("path", "revision")
            .values_list("path", "revision", "content", "reason"))
    for path, revision, content, reason in rows.iterator(chunk_size=BATCH):
        yield {"path": path, "revision": revision}, {"content": content, "reason": reason}


register_source("entry", _entries)
register_source("candidate", _candidates)
register_source("document", _documents)


@dataclass(frozen=True)
class StoredFinding:
    """A finding in a stored row: which row (``source`` and ``row``), where, and allowed or not."""

    source: str
    row: dict[str, Any]
    finding: Finding
    allowed: bool

    def as_dict(self) -> dict[str, Any]:
        origin, version = rule_origin(self.finding.kind)
        return {"source": self.source, **self.row, **self.finding.as_dict(),
                "offset": self.finding.offset, "length": self.finding.length,
                "rule_origin": origin, "rule_version": version, "allowed": self.allowed}


def json_texts(value: Any, prefix: str) -> dict[str, str | None]:
    """Every string of a stored JSON value, by path (for the sources of JSON rows)."""
    return dict(json_strings(value, prefix))


def rule_origin(kind: str) -> tuple[str, str]:
    """(origin, version) of the rule that finds ``kind``; the configured tokens are GedWeb's."""
    rule = RULES_BY_ID.get(kind)
    if rule is None:
        return "gedweb", GEDWEB_RULES_VERSION
    return rule.origin, rule.version


def record_findings(project: Project) -> list[StoredFinding]:
    """Scan the project's stored text and keep what is found (memory.SecretFinding).

    The scan reads first, outside any transaction; then one short
    transaction replaces the project's findings, so the admin always shows
    one whole scan.
    """
    hits = list(scan_project(project))
    now = timezone.now()
    rows = []
    for hit in hits:
        origin, version = rule_origin(hit.finding.kind)
        seq = hit.row.get("seq") if hit.source == "entry" else None
        rows.append(SecretFinding(
            project=project, source=hit.source, row=hit.row, seq=seq, field=hit.finding.field,
            kind=hit.finding.kind, rule_origin=origin, rule_version=version,
            line=hit.finding.line, column=hit.finding.column, offset=hit.finding.offset,
            length=hit.finding.length, fingerprint=hit.finding.fingerprint,
            allowed=hit.allowed, found_at=now))
    with transaction.atomic():
        SecretFinding.objects.filter(project=project).delete()
        SecretFinding.objects.bulk_create(rows, batch_size=BATCH)
    return hits


def scan_project(project: Project) -> Iterator[StoredFinding]:
    """Every finding in the project's stored text, source by source, row by row."""
    scan = scanner()
    for name, source in _SOURCES.items():
        for row, fields in source(project):
            found = scan.scan_fields(fields)
            if not found:
                continue
            ok = allowed(project, (finding.fingerprint for finding in found))
            for finding in found:
                yield StoredFinding(name, row, finding, finding.fingerprint in ok)
