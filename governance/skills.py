"""Project skills: validated SKILL.md text and its provenance, in one row per version.

GedPi writes the provenance record before the file (gap G-7); here both are
one row inserted in one transaction, under a lock on the project row.
Like GedPi, different content under an existing name is refused (409) on
every path (PUT, ged_import, POST .../checkout, legacy records:
refuse_other_bytes), and identical content is "confirmed": nothing new is
written and the original installed_at stays. A legacy or drifted record with identical content is
re-verified by adding a version with a fresh reusable-explicit record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from gedweb.errors import Conflict
from gedweb.lib import skills as rules
from gedweb.lib.digest import sha256_text
from gedweb.lib.governance import format_time
from gedweb.validation import FieldErrors, validate_text
from governance import ledger
from governance.models import Skill
from memory import quotas, secret_scan
from memory.locks import NextVersion, next_version
from memory.models import Project, format_timestamp

CREATED, CONFIRMED = "created", "confirmed"


@dataclass(frozen=True)
class SkillWrite:
    skill: Skill
    result: str  # "created" or "confirmed"


def validate_skill(*, name: str, content: str, reason: str, source: str | None) -> None:
    errors = FieldErrors()
    problem = rules.name_problem(name)
    if problem:
        errors.add("name", problem)
    else:
        problem = rules.content_problem(name, content)
        if problem:
            errors.add("content", problem)
    reason_rule = f"must be 1-{rules.MAX_REASON_CHARS} characters, not blank"
    if len(reason) > rules.MAX_REASON_CHARS:
        errors.add("reason", reason_rule)
    else:
        errors.check("reason", partial(validate_text, blank_message=reason_rule), reason)
    if source is not None:
        if not 1 <= len(source) <= rules.MAX_SOURCE_CHARS:
            errors.add("source", f"must be 1-{rules.MAX_SOURCE_CHARS:,} characters")
        else:
            # A source may be blank: it only says where the skill came from.
            errors.check("source", partial(validate_text, blank_allowed=True), source)
    errors.raise_if_any()


def _next_version(project: Project, name: str) -> NextVersion[Skill]:
    """The skill's newest version and the number of the next, under the project lock.

    Serialises writers of this project's skills across processes (the one
    lock of the counter, ged_import's too); UNIQUE(project, name, version)
    is the backstop.
    """
    return next_version(project=project, rows=Skill.objects.filter(project=project, name=name))


def refuse_other_bytes(current: Skill | None, name: str, content: str) -> None:
    """A skill's bytes never change under its name: the one rule of every write path.

    A new version may carry a new provenance record (re-verification, a
    checkout's record as found), never other content: a changed SKILL.md
    would otherwise be served as the skill its name was trusted for.
    """
    if current is not None and current.content != content:
        raise Conflict(
            f"skill {name} exists with different content (sha256 {current.content_hash}); "
            "a skill's bytes never change under its name: use a new name"
        )


def skill_put(
    *, project: Project, name: str, content: str, reason: str, source: str | None, author: str
) -> SkillWrite:
    validate_skill(name=name, content=content, reason=reason, source=source)
    with transaction.atomic():
        latest = _next_version(project, name)
        current = latest.current
        refuse_other_bytes(current, name, content)
        if current is not None and current.verified:
            return SkillWrite(current, CONFIRMED)
        secret_scan.refuse_secrets(project, {"content": content, "reason": reason,
                                             "source": source})
        quotas.quota_charge(project=project, kind="skills", size_bytes=quotas.text_bytes(content))
        now = timezone.now()
        skill = Skill.objects.create(
            project=project,
            name=name,
            version=latest.number,
            content=content,
            recorded_hash=sha256_text(content),
            provenance=Skill.Provenance.REUSABLE_EXPLICIT,
            reason=reason.strip(),
            source=source,
            installed_at=current.installed_at if current else now,
            author=author,
            created_at=now,
        )
    return SkillWrite(skill, CONFIRMED if current else CREATED)


def skill_record_legacy(
    *,
    project: Project,
    name: str,
    content: str,
    recorded_hash: str | None,
    provenance: str = Skill.Provenance.LEGACY_UNVERIFIED,
    reason: str = "",
    source: str | None = None,
    installed_at: datetime | None = None,
    author: str,
) -> Skill:
    """Record a skill and its provenance as found in a GedPi checkout (for ged_import).

    The record is kept as found: a missing provenance is legacy-unverified and
    a contentHash that does not match the file leaves the skill unverified.
    """
    problem = rules.name_problem(name)
    if problem:
        raise ValidationError({"name": [problem]})
    if provenance not in Skill.Provenance.values:
        raise ValidationError({"provenance": [f"must be one of {', '.join(Skill.Provenance)}"]})
    with transaction.atomic():
        latest = _next_version(project, name)
        current = latest.current
        refuse_other_bytes(current, name, content)
        if current is not None:
            if (current.content, current.recorded_hash, current.provenance) == (
                content, recorded_hash, provenance
            ):
                return current
            raise Conflict(f"skill {name} is already recorded")
        secret_scan.refuse_secrets(project, {"content": content, "reason": reason,
                                             "source": source})
        quotas.quota_charge(project=project, kind="skills", size_bytes=quotas.text_bytes(content))
        now = timezone.now()
        return Skill.objects.create(
            project=project,
            name=name,
            version=latest.number,
            content=content,
            recorded_hash=recorded_hash,
            provenance=provenance,
            reason=reason.strip()[: rules.MAX_REASON_CHARS],
            source=source,
            installed_at=installed_at or now,
            author=author,
            created_at=now,
        )


def current_skills(project: Project) -> list[Skill]:
    return list(Skill.objects.for_project(project).current().order_by("name"))


def off_record(rows: list[Skill]) -> set[int]:
    """The ids of ``rows`` that do not match their trust ledger records (governance.ledger).

    A skill whose content and recorded hash were both rewritten behind
    GedWeb's back still hashes right; the ledger is what tells.
    """
    return {pk for _, pk in ledger.unverified_rows((ledger.Kind.SKILL, row) for row in rows)}


def skill_summary(skill: Skill, *, on_record: bool = True) -> dict[str, Any]:
    """``on_record`` False (see off_record) reports the skill unverified, whatever its hashes."""
    text = rules.description(skill.content)
    return {
        "name": skill.name,
        "version": skill.version,
        "content_hash": skill.content_hash,
        "recorded_hash": skill.recorded_hash,
        "provenance": skill.provenance,
        "status": skill.status if on_record else "unverified",
        "description": text,
        "triggers": rules.triggers(text),
    }


def skill_as_dict(skill: Skill) -> dict[str, Any]:
    return {
        **skill_summary(skill, on_record=not off_record([skill])),
        "content": skill.content,
        "reason": skill.reason,
        "source": skill.source,
        "installed_at": format_timestamp(skill.installed_at),
        "author": skill.author,
        "created_at": format_timestamp(skill.created_at),
    }


def skills_matching(project: Project, text: str) -> list[Skill]:
    """Verified skills with a trigger word inside text (case-insensitive); drifted never match,
    nor do skills off the trust ledger's record."""
    matching = [
        skill
        for skill in current_skills(project)
        if skill.verified and rules.matches(rules.triggers(rules.description(skill.content)), text)
    ]
    unverified = off_record(matching)
    return [skill for skill in matching if skill.pk not in unverified]


# --- GedPi's SKILLS-STATE.json (ged_import / ged_export) -----------------------------------


def gedpi_skill_record(skill: Skill) -> dict[str, Any]:
    """The skill's provenance record in SKILLS-STATE.json (gedpi-behaviour §4.1).

    An imported version gives back the record exactly as found; a version
    GedWeb wrote is described as GedPi's ged_skill would have recorded it.
    """
    if skill.gedpi_record is not None:
        record: dict[str, Any] = json.loads(skill.gedpi_record)
        return record
    record = {"name": skill.name, "source": "created"}
    if skill.source is not None:
        record["sourcePath"] = skill.source
    record["taskRefs"] = []
    record["installedAt"] = format_time(skill.installed_at)
    if skill.reason.strip():
        record["reason"] = skill.reason
    record["provenance"] = skill.provenance
    if skill.recorded_hash is not None:
        record["contentHash"] = skill.recorded_hash
    return record


def exported_skills(project: Project) -> list[Skill]:
    """Current skill versions in SKILLS-STATE.json order: the order each name first appeared."""
    first = dict(
        Skill.objects.for_project(project).filter(version=1).values_list("name", "id")
    )
    return sorted(current_skills(project), key=lambda skill: first.get(skill.name, 0))


def gedpi_skills_state(skills: list[Skill]) -> dict[str, Any]:
    """SKILLS-STATE.json of ``skills`` (exported_skills: its order)."""
    return {"schemaVersion": 2, "managed": [gedpi_skill_record(skill) for skill in skills]}


def skill_import(
    *,
    project: Project,
    name: str,
    content: str,
    record: dict[str, Any],
    installed_at: datetime,
    author: str,
) -> str:
    """Record a skill and its provenance record as found in a checkout.

    Nothing is written when the current version already exports to the same
    SKILL.md and record; other bytes under an existing name are refused (409,
    refuse_other_bytes); the same bytes with another record make a new
    version that keeps the record as found, so a drifted hash stays
    unverified and a record without provenance stays legacy-unverified.
    Returns "created", "updated" or "unchanged".
    """
    problem = rules.name_problem(name)
    if problem:
        raise ValidationError({"name": [problem]})
    provenance = record.get("provenance", Skill.Provenance.LEGACY_UNVERIFIED)
    if provenance not in Skill.Provenance.values:
        raise ValidationError({"provenance": [f"must be one of {', '.join(Skill.Provenance)}"]})
    with transaction.atomic():
        latest = _next_version(project, name)
        current = latest.current
        refuse_other_bytes(current, name, content)
        if (
            current is not None
            and current.content == content
            and json.dumps(gedpi_skill_record(current)) == json.dumps(record)
        ):
            return "unchanged"
        secret_scan.refuse_secrets(project, {"content": content,
                                             "reason": record.get("reason"),
                                             "source": record.get("sourcePath")})
        quotas.quota_charge(project=project, kind="skills", size_bytes=quotas.text_bytes(content))
        Skill.objects.create(
            project=project,
            name=name,
            version=latest.number,
            content=content,
            recorded_hash=record.get("contentHash"),
            provenance=provenance,
            reason=(record.get("reason") or "").strip()[: rules.MAX_REASON_CHARS],
            source=record.get("sourcePath"),
            installed_at=installed_at,
            gedpi_record=json.dumps(record, ensure_ascii=False),
            author=author,
            created_at=timezone.now(),
        )
    return "updated" if current else "created"
