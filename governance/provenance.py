"""Which governance records a checkout brought, and whether an operator trusts them.

``ged_import`` and ``POST .../checkout`` store a checkout's governance.json
as found: one GovernanceRevision with operation ``import`` whose evidence
rows carry its revision number. Nothing of it is rewritten; this module
reads which evidence records, approvals and lifecycle transitions each
import added (against the stored revision before it), and which of those
imports an operator trusted (GovernanceTrust, on the ledger). An untrusted
import never counts as a person's word for the guard or a lifecycle step
(governance.services.guard_check), and the API, the pages and the context
bundle show it as imported, with the time it claims.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gedweb.lib import governance as gov
from governance import ledger
from governance.models import EvidenceRecord, GovernanceRevision, GovernanceTrust, WorkItem

IMPORT_OPERATION = "import"


@dataclass(frozen=True)
class Imported:
    """The import that brought a record: its revision, who sent it, when, who trusts it."""

    revision: int
    author: str
    imported_at: datetime
    trusted_by: str | None

    @property
    def trusted(self) -> bool:
        return self.trusted_by is not None

    def where(self) -> str:
        return f"governance revision {self.revision}, by {self.author}"

    def as_dict(self) -> dict[str, Any]:
        return {"revision": self.revision, "author": self.author,
                "imported_at": gov.format_time(self.imported_at),
                "trusted_by": self.trusted_by}


@dataclass(frozen=True)
class Provenance:
    """Imported records of one work item, by id; what is not here GedWeb's services wrote."""

    work: WorkItem
    evidence: dict[str, Imported] = field(default_factory=dict)
    # id -> (the approval as imported, in canonical JSON; its import)
    approvals: dict[str, tuple[str, Imported]] = field(default_factory=dict)
    transitions: dict[str, Imported] = field(default_factory=dict)
    # Lifecycles an import set with no lifecycle transition leading to them.
    routeless: dict[str, Imported] = field(default_factory=dict)

    def approval(self, approval: dict[str, Any]) -> Imported | None:
        found = self.approvals.get(str(approval.get("id")))
        if found is None or found[0] != _canonical(approval):
            return None  # written (or rewritten) through GedWeb's update since
        return found[1]

    def lifecycle(self, state: dict[str, Any]) -> tuple[Imported, bool] | None:
        """The import that set the current lifecycle, and whether by a transition (its route).

        None when GedWeb's lifecycle route set it, or it is the active
        lifecycle every work item starts in.
        """
        transitions = state.get("lifecycleTransitions", [])
        if transitions:
            last = self.transitions.get(transitions[-1]["id"])
            return (last, True) if last is not None else None
        imported = self.routeless.get(state["lifecycle"])
        return (imported, False) if imported is not None else None

    def untrusted_evidence(self, record: Mapping[str, Any]) -> Imported | None:
        imported = self.evidence.get(record["id"])
        return imported if imported is not None and not imported.trusted else None


def _canonical(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def claimed_time_flag(record: dict[str, Any], work: WorkItem,
                      imported: Imported | None) -> str | None:
    """Why an imported record's own recordedAt cannot be right, or None.

    Kept as found; this only says so: a time before its work item was
    created, or after the import that brought it.
    """
    if imported is None or not gov.is_canonical_time(record.get("recordedAt")):
        return None
    claimed = datetime.strptime(record["recordedAt"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=UTC)
    if claimed < work.created_at:
        return "dated before its work item was created"
    if claimed > imported.imported_at:
        return "dated after the import that brought it"
    return None


def provenance(work: WorkItem) -> Provenance:
    """The imported records of ``work``: one query when nothing was ever imported."""
    imports = list(GovernanceRevision.objects.filter(work=work, operation=IMPORT_OPERATION)
                   .order_by("revision"))
    found = Provenance(work)
    if not imports:
        return found
    rows = list(GovernanceTrust.objects.filter(work=work).order_by("revision"))
    # A trust row inserted behind GedWeb's back (the application role may
    # INSERT) has no ledger record, or a changed one: it trusts nothing.
    forged = ledger.unverified_rows((ledger.Kind.GOVERNANCE_TRUST, row) for row in rows)
    trusts = [(row.revision, row.trusted_by) for row in rows
              if (ledger.Kind.GOVERNANCE_TRUST, row.pk) not in forged]
    by_revision: dict[int, Imported] = {}
    for row in imports:
        # The earliest trust at or after an import covers it.
        trusted_by = next((by for number, by in trusts if number >= row.revision), None)
        imported = Imported(row.revision, row.author, row.created_at, trusted_by)
        by_revision[row.revision] = imported
        before = (GovernanceRevision.objects.filter(work=work, revision__lt=row.revision)
                  .order_by("-revision").first())
        earlier = before.document_without_evidence if before is not None else {}
        document = row.document_without_evidence
        known_transitions = {t["id"] for t in earlier.get("lifecycleTransitions", [])}
        for transition in document.get("lifecycleTransitions", []):
            if transition["id"] not in known_transitions:
                found.transitions[transition["id"]] = imported
        known_approvals = {_canonical(a) for a in earlier.get("approvals", [])}
        for approval in document.get("approvals", []):
            text = _canonical(approval)
            if text not in known_approvals:
                found.approvals[approval["id"]] = (text, imported)
        lifecycle = document["lifecycle"]
        if (not document.get("lifecycleTransitions") and lifecycle != "active"
                and lifecycle not in found.routeless):
            found.routeless[lifecycle] = imported
    for evidence_id, number in (EvidenceRecord.objects.filter(work=work, revision__in=by_revision)
                                .values_list("evidence_id", "revision")):
        found.evidence[evidence_id] = by_revision[number]
    return found


def untrusted_reason(found: Provenance, state: dict[str, Any], action: str,
                     project_id: str) -> str | None:
    """Why ``action`` may not rest on imported evidence, or None.

    The evidence GedPi's guard counts for the action (gov.relied_evidence)
    must be GedWeb's own or an import an operator trusted.
    """
    for role, record in gov.relied_evidence(state, action):
        imported = found.untrusted_evidence(record)
        if imported is not None:
            return (
                f"Ged work {state['workId']}: {role} evidence {record['id']} was imported from "
                f"a checkout ({imported.where()}) and not trusted by an operator; an operator "
                f"who has read it can trust it with `manage.py work trust {state['workId']} "
                f"--project {project_id}`."
            )
    return None


def lifecycle_note(found: Provenance, state: dict[str, Any]) -> str | None:
    """A sentence on a lifecycle an untrusted import set, or None."""
    origin = found.lifecycle(state)
    if origin is None or origin[0].trusted:
        return None
    imported, route = origin
    how = "with an imported lifecycle transition" if route else "without GedWeb's lifecycle route"
    return (f"Its lifecycle {state['lifecycle']} was imported from a checkout {how} "
            f"({imported.where()}) and is not trusted by an operator.")


def as_dict(found: Provenance, state: dict[str, Any]) -> dict[str, Any]:
    """The API's and the pages' view: each imported record, its import and its claimed time."""
    work = found.work
    evidence = []
    for record in state["evidence"]:
        imported = found.evidence.get(record["id"])
        if imported is not None:
            evidence.append({"id": record["id"], "kind": record["kind"],
                             "source": record["source"], "claimed_at": record["recordedAt"],
                             "time_flag": claimed_time_flag(record, work, imported),
                             "imported": imported.as_dict()})
    approvals = []
    for approval in state.get("approvals", []):
        imported = found.approval(approval)
        if imported is not None:
            approvals.append({"id": approval["id"], "kind": approval["kind"],
                              "status": approval["status"],
                              "claimed_at": approval["recordedAt"],
                              "time_flag": claimed_time_flag(approval, work, imported),
                              "imported": imported.as_dict()})
    transitions = []
    for transition in state.get("lifecycleTransitions", []):
        imported = found.transitions.get(transition["id"])
        if imported is not None:
            transitions.append({"id": transition["id"], "to": transition["to"],
                                "claimed_at": transition["recordedAt"],
                                "time_flag": claimed_time_flag(transition, work, imported),
                                "imported": imported.as_dict()})
    origin = found.lifecycle(state)
    lifecycle = None
    if origin is not None:
        lifecycle = {"lifecycle": state["lifecycle"], "route": origin[1],
                     "imported": origin[0].as_dict()}
    return {"evidence": evidence, "approvals": approvals, "lifecycle_transitions": transitions,
            "lifecycle": lifecycle}
