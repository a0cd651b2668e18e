"""The artifact contract: everything GedWeb persists, as data (GET /v1/contract).

GedPi's rule, kept here: an artifact is persisted only when it has exactly
one producer, named consumers, an authority level and a lifecycle. Each
database model is listed by its label; tests fail when a model of a GedWeb
app has no row here.
"""

from __future__ import annotations

from typing import Any

AUTHORITY_LEVELS = (
    "machine-authority",
    "approved-instructions",
    "durable-data",
    "project-configuration",
    "work-input",
    "projection",
    "compatibility",
)

_APPEND_ONLY = "append-only: rows are never updated or deleted (ORM refusal and database triggers)"

ARTIFACTS: list[dict[str, Any]] = [
    {
        "artifact": "memory.Project",
        "storage": "database",
        "producer": "memory.services.project_create (API, admin, `project create`)",
        "consumers": ["every project-scoped endpoint", "admin", "pages"],
        "authority": "machine-authority",
        "lifecycle": "created once; never deleted (its memory is append-only); name editable",
    },
    {
        "artifact": "memory.Membership",
        "storage": "database",
        "producer": "memory.services.membership_set (`manage.py member add`, Django admin)",
        "consumers": ["pages (Project.objects.visible_to)"],
        "authority": "machine-authority",
        "lifecycle": "one per (user, project): viewer or operator; changed or removed by operators",
    },
    {
        "artifact": "memory.ProjectToken",
        "storage": "database",
        "producer": "memory.services.project_create / project_token_create",
        "consumers": ["bearer authentication"],
        "authority": "machine-authority",
        "lifecycle": "SHA-256 only; revoked, never deleted: who held which token stays on record",
    },
    {
        "artifact": "memory.MemoryEntry",
        "storage": "database",
        "producer": "memory.services.memory_entry_create (API, approved candidates, `memory add`)",
        "consumers": ["memory API", "mirror", "verify", "context bundle", "pages"],
        "authority": "durable-data",
        "lifecycle": f"{_APPEND_ONLY}; hash-chained per project; corrections are new entries",
    },
    {
        "artifact": "memory.ChainCheckpoint",
        "storage": "database",
        "producer": (
            "memory.checkpoints.take (every GEDWEB_CHECKPOINT_EVERY appends after commit, "
            "`memory checkpoint`, `memory verify` and `doctor` on an intact chain)"
        ),
        "consumers": ["memory.checkpoints.verify (GET /verify, `memory verify`, `doctor`)"],
        "authority": "machine-authority",
        "lifecycle": (
            f"{_APPEND_ONLY}; one HMAC-signed (seq, hash) head per row, unique per seq; "
            "copied to <GEDWEB_MEMORY_ROOT>/<project>/CHECKPOINTS"
        ),
    },
    {
        "artifact": "memory.ChainVerification",
        "storage": "database",
        "producer": "memory.services.memory_chain_verify (`memory verify`, `doctor`)",
        "consumers": ["pages (the overview's chain badge, memory.services.chain_status)"],
        "authority": "projection",
        "lifecycle": (
            "one row per project, replaced at each check: when the chain was last verified, "
            "how many entries, and the first problem; re-running `memory verify` rebuilds it"
        ),
    },
    {
        "artifact": "memory.AllowedSecret",
        "storage": "database",
        "producer": (
            "memory.secret_scan.secret_allow (`manage.py memory allow-secret`, Django admin)"
        ),
        "consumers": [
            "memory.secret_scan.refuse_secrets (every write of agent or user text)",
            "`manage.py memory scan`",
        ],
        "authority": "machine-authority",
        "lifecycle": (
            f"{_APPEND_ONLY}; one per (project, fingerprint of a finding): who allowed it "
            "and why; never the secret's text"
        ),
    },
    {
        "artifact": "memory.SecretFinding",
        "storage": "database",
        "producer": "memory.secret_scan.record_findings (`manage.py memory scan`)",
        "consumers": ["Django admin (the index's count, each finding's redaction link)"],
        "authority": "projection",
        "lifecycle": (
            "replaced for a project by each scan of it; where a secret sits in stored text, "
            "its kind, rule origin and version, and fingerprint; never the secret's text"
        ),
    },
    {
        "artifact": "memory.MemoryCandidate",
        "storage": "database",
        "producer": "memory.services.candidate_create",
        "consumers": ["reviewers (API, admin)", "candidate_approve"],
        "authority": "work-input",
        "lifecycle": "pending until approved (then it names its one entry) or rejected",
    },
    {
        "artifact": "memory.DocumentRevision",
        "storage": "database",
        "producer": "memory.documents.document_put (PUT /documents/{path}, `ged_import`)",
        "consumers": ["context bundle", "pages", "GedPi export"],
        "authority": "durable-data",
        "lifecycle": f"{_APPEND_ONLY}; one row per revision; reports are write-once",
    },
    {
        "artifact": "memory.RateCounter",
        "storage": "database",
        "producer": (
            "gedweb.throttling.count_request (every authenticated API request, on PostgreSQL "
            "when REDIS_URL is unset)"
        ),
        "consumers": ["gedweb.throttling.TokenRateThrottle (429 rate_limited)"],
        "authority": "machine-authority",
        "lifecycle": (
            "one per (limit, token, window); counted by one atomic upsert; each process "
            "deletes the rows of finished windows once per window; an UNLOGGED table, "
            "emptied by a crash"
        ),
    },
    {
        "artifact": "<SQLite database>-rates",
        "storage": "file",
        "producer": (
            "gedweb.throttling.count_request (every authenticated API request, on SQLite "
            "when REDIS_URL is unset)"
        ),
        "consumers": ["gedweb.throttling.TokenRateThrottle (429 rate_limited)"],
        "authority": "machine-authority",
        "lifecycle": (
            "a SQLite file (0600) beside the database with memory.RateCounter's rows, off the "
            "database's writer lock; committed without fsync; nothing to back up, and "
            "deleting it with the server stopped resets every count"
        ),
    },
    {
        "artifact": "memory.EntryVector",
        "storage": "database",
        "producer": (
            "memory.recall.indexer (`manage.py memory index`, which `make run` starts as "
            "--follow), never the append"
        ),
        "consumers": ["memory.recall.ranking (GET/POST /recall, MCP, CLI, pages, context)"],
        "authority": "projection",
        "lifecycle": (
            "derived from an entry's content, outside the chain: one row per entry, int8 "
            "vector, model id and the content's sha256; replaced on a model change, deleted "
            "by a redaction in its transaction; rebuilt by `memory index --rebuild`"
        ),
    },
    {
        "artifact": "memory.DocumentVector",
        "storage": "database",
        "producer": "memory.recall.indexer (index_revision: the follower and `memory index`)",
        "consumers": ["memory.recall.documents (recall's document sections)"],
        "authority": "projection",
        "lifecycle": (
            "derived from a document's current revision, cut at its headings: one row per "
            "section with its int8 vector; a newer revision's replace them; rebuilt by "
            "`memory index --rebuild`"
        ),
    },
    {
        "artifact": "memory.RecallCursor",
        "storage": "database",
        "producer": "memory.recall.indexer.follow_once (with each batch of vectors)",
        "consumers": ["the indexer (where to resume)", "doctor and /metrics (its backlog)"],
        "authority": "machine-authority",
        "lifecycle": "one per model: the last entry id the indexer followed; reset by a rebuild",
    },
    {
        "artifact": "memory.RecallProgress",
        "storage": "database",
        "producer": "memory.recall.indexer (with each batch of vectors; a redaction moves "
                    "its generation)",
        "consumers": ["GET /recall's index.through_seq", "each process's cached matrix"],
        "authority": "machine-authority",
        "lifecycle": (
            "one per (project, model): through_seq, every entry up to it indexed; generation, "
            "moved when vectors leave so every process drops its cached matrix"
        ),
    },
    {
        "artifact": "<SQLite database>-indexer",
        "storage": "file",
        "producer": "memory.recall.indexer.lease (the follower's flock)",
        "consumers": ["every other indexer on the machine (waits as a standby)"],
        "authority": "machine-authority",
        "lifecycle": "an empty file (0600) beside the database; the lock goes with its process",
    },
    {
        "artifact": "memory.ProjectQuota",
        "storage": "database",
        "producer": (
            "memory.quotas.quota_charge (in the transaction of every stored entry, candidate, "
            "document, standards import, work file, task artifact, evidence record and skill); "
            "limit_mib by operators in the Django admin"
        ),
        "consumers": ["every write of those kinds (409 quota_exceeded)", "admin"],
        "authority": "machine-authority",
        "lifecycle": (
            "one per (project, kind); used_bytes only grows (stored rows are never removed); "
            "backfilled by migration memory 0010"
        ),
    },
    {
        "artifact": "governance.WorkItem",
        "storage": "database",
        "producer": "governance.services.work_open (or work_import for `ged_import`)",
        "consumers": ["governance", "active work", "context bundle"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}: its META never changes",
    },
    {
        "artifact": "governance.GovernanceRevision",
        "storage": "database",
        "producer": (
            "governance.services.governance_write (every accepted write); governance_import "
            "(`ged_import`: a checkout's governance.json under its own revision number)"
        ),
        "consumers": ["guard", "lifecycle", "revision history", "context bundle"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}; revisions strictly +1 per work item",
    },
    {
        "artifact": "governance.EvidenceRecord",
        "storage": "database",
        "producer": (
            "governance.services.governance_write; governance_import (`ged_import`, an "
            "upload: kept as found, counted only once an operator trusts it)"
        ),
        "consumers": ["guard", "governance documents"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}; the evidence list only grows",
    },
    {
        "artifact": "governance.GovernanceTrust",
        "storage": "database",
        "producer": (
            "governance.services.governance_trust (`manage.py work trust`, "
            "`ged_import --trust-governance`): an operator's word"
        ),
        "consumers": ["guard", "lifecycle", "work pages and API (provenance)"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}; one per (work item, trusted import revision)",
    },
    {
        "artifact": "governance.WorkFile",
        "storage": "database",
        "producer": "work_open (templates), work_file_write and work_file_import (`ged_import`)",
        "consumers": ["coordinator", "plan binding", "context bundle"],
        "authority": "work-input",
        "lifecycle": f"{_APPEND_ONLY}; one row per version of DIRECT/SPEC/TASKS/TESTS.md",
    },
    {
        "artifact": "governance.TaskArtifact",
        "storage": "database",
        "producer": "task_artifact_write (the work engine), task_artifact_import (`ged_import`)",
        "consumers": ["retry and recovery"],
        "authority": "work-input",
        "lifecycle": f"{_APPEND_ONLY}; one row per version of BRIEF.md, HISTORY.json, RECOVERY.md",
    },
    {
        "artifact": "governance.ActiveWork",
        "storage": "database",
        "producer": "governance.services.active_work_select",
        "consumers": ["agents resolving their session's work"],
        "authority": "machine-authority",
        "lifecycle": "one per (project, session); replaced on select, deleted on clear",
    },
    {
        "artifact": "governance.StandardsImport",
        "storage": "database",
        "producer": "POST /standards/imports; decided by operators (admin token or Django admin)",
        "consumers": ["STANDARDS.md assembly", "context bundle"],
        "authority": "approved-instructions",
        "lifecycle": "one decision per (path, sha256 of raw bytes): pending, accepted or rejected",
    },
    {
        "artifact": "governance.StandardsDecision",
        "storage": "database",
        "producer": "StandardsImport.accept/reject (admin token, Django admin, or "
                    "`ged_import --trust-decisions` for a checkout's IMPORT-STATE.json an "
                    "operator names)",
        "consumers": ["STANDARDS.md assembly", "standards state view", "operators"],
        "authority": "approved-instructions",
        "lifecycle": f"{_APPEND_ONLY}; at most one per import: who accepted or rejected, and when",
    },
    {
        "artifact": "governance.LedgerRecord",
        "storage": "database",
        "producer": "every insert of a trust-bearing row, in its own transaction "
                    "(governance.ledger.record_created, a post_save receiver)",
        "consumers": ["doctor (ledger)", "GET /ledger/verify",
                      "context bundle, /standards, ged_export, skills match (what is served)"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}; one per trust-bearing row, hash-linked and signed",
    },
    {
        "artifact": "governance.Skill",
        "storage": "database",
        "producer": "PUT /skills/{name}; skill_import (`ged_import`, record kept as found)",
        "consumers": ["skill matching"],
        "authority": "project-configuration",
        "lifecycle": "content and provenance hash stored together; drifted skills never match",
    },
    {
        "artifact": "governance.ContextDelivery",
        "storage": "database",
        "producer": "governance.context.context_deliver (GET /context, also from `gedweb hook`)",
        "consumers": ["operators auditing what agents were told"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}; one row per delivered bundle with its sha256 and, "
        "from a hook, the agent's session",
    },
    {
        "artifact": "governance.ContextBundle",
        "storage": "database",
        "producer": "governance.context.context_deliver (GET /context)",
        "consumers": ["operators reading a delivered bundle on the context log pages"],
        "authority": "machine-authority",
        "lifecycle": f"{_APPEND_ONLY}; one row per project and sha256, the text and its "
        "section outline, shown only while its text still has that sha256",
    },
    {
        "artifact": "<GEDWEB_MEMORY_ROOT>/<project>/MEMORY.md",
        "storage": "file",
        "producer": "memory.mirror (inline after commit, or `memory mirror --follow`)",
        "consumers": ["humans and tools reading memory outside the service"],
        "authority": "projection",
        "lifecycle": "regenerable from the database; checked and rebuilt by `memory mirror`",
    },
    {
        "artifact": "<GEDWEB_MEMORY_ROOT>/<project>/CHECKPOINTS",
        "storage": "file",
        "producer": (
            "memory.checkpoints.sync_file (after a checkpoint is taken, `memory mirror --follow`)"
        ),
        "consumers": ["memory.checkpoints.verify", "operators keeping evidence off the database"],
        "authority": "machine-authority",
        "lifecycle": (
            "append-only: one HMAC-signed line per checkpoint, fsynced under the mirror lock, "
            "never rewritten; outlives deleted checkpoint rows; not regenerable"
        ),
    },
    {
        "artifact": "<GEDWEB_MEMORY_ROOT>/<project>/LEDGER-CHECKPOINTS",
        "storage": "file",
        "producer": (
            "governance.ledger_checkpoints.sync_file (after each ledger append commits, "
            "`memory mirror --follow`, `doctor`, GET /ledger/verify)"
        ),
        "consumers": [
            "governance.ledger_checkpoints.ledger_report (`doctor`, GET /ledger/verify)",
            "operators keeping evidence off the database",
        ],
        "authority": "machine-authority",
        "lifecycle": (
            "append-only: one HMAC-signed line per trust ledger record, fsynced under the "
            "mirror lock, never rewritten; outlives deleted ledger records; not regenerable"
        ),
    },
    {
        "artifact": "<GEDWEB_MEMORY_ROOT>/<project>/.MEMORY.md.lock",
        "storage": "file",
        "producer": "memory.mirror",
        "consumers": ["mirror writers (flock)"],
        "authority": "machine-authority",
        "lifecycle": "empty lock file; kept",
    },
    {
        "artifact": "<GEDWEB_DATA_DIR>/prometheus/<kind>_<pid>.db",
        "storage": "file",
        "producer": "prometheus_client in each gunicorn worker (gedweb.metrics, memory.metrics)",
        "consumers": ["GET /metrics, which adds up every worker's files"],
        "authority": "machine-authority",
        "lifecycle": (
            "counters and histograms of the running server, one file per worker and kind; "
            "removed when gunicorn starts (gunicorn.conf.py); nothing to back up"
        ),
    },
    {
        # Not the server's: the CLI's, in a user's checkout. POST and GET
        # /checkout persist nothing of their own (the import's rows are listed above).
        "artifact": "<checkout>/.ged/runtime/gedweb/pull.json",
        "storage": "file",
        "producer": "gedweb pull (gedweb.checkout.sync.pull_layout), after its files are written",
        "consumers": ["gedweb pull (which local files changed since the last pull)"],
        "authority": "machine-authority",
        "lifecycle": (
            "the sha256 of each file the last pull wrote, rewritten by every completed pull; "
            "under .ged/runtime/, which GedPi's .ged/.gitignore keeps out of Git; never sent "
            "by gedweb push, never read by ged_import"
        ),
    },
]


# GedPi's own artifact contract (its inventory, rows 1-20, and what its code
# keeps beside them), row for row as GedPi states it: the path in a
# checkout, its producer, consumers, authority and lifecycle there, and
# where GedWeb keeps it ("gedweb": the model and kind, or why nothing).
# tests/site/test_inventory.py fails when a GedPi artifact has no row.
GEDPI_ARTIFACTS: list[dict[str, Any]] = [
    {
        "path": ".ged/VERSION",
        "producer": "workflow initialisation/migration",
        "consumers": ["current-version check (ensureGedProjectCurrent)", "doctor"],
        "authority": "machine-authority",
        "lifecycle": "required; only ever moves upward; the integer 3 and a newline",
        "gedweb": "not stored: ged_import reads version 3 only; ged_export and gedweb pull "
                  "write 3 (governance.gedpi_export)",
    },
    {
        "path": ".ged/.gitignore",
        "producer": "workflow initialisation",
        "consumers": ["Git"],
        "authority": "machine-authority",
        "lifecycle": "required; ignores runtime/, REPO-MAP.md and REPO-MAP.json",
        "gedweb": "not stored: ged_export writes GedPi's exact bytes where it is missing",
    },
    {
        "path": ".ged/IMPORT-STATE.json",
        "producer": "standards import",
        "consumers": ["standards hash check and renewed approval"],
        "authority": "machine-authority",
        "lifecycle": "created lazily; hash-bound import decisions, rewritten on every resolution",
        "gedweb": "governance.StandardsImport and governance.StandardsDecision (a checkout's "
                  "decisions arrive pending unless `ged_import --trust-decisions`); "
                  "ged_export writes it from them",
    },
    {
        "path": ".ged/MEMORY-MIGRATION.json",
        "producer": "durable-memory v3 migration",
        "consumers": ["startup convergence check", "humans reviewing the migration"],
        "authority": "machine-authority",
        "lifecycle": "a single completion record, never changed afterwards",
        "gedweb": "not stored: `ged_migrate_v3` writes it in the checkout "
                  "(gedweb.checkout.v3.journal), ged_import requires it",
    },
    {
        "path": ".ged/runtime/migrations/durable-memory-v3/*",
        "producer": "v3 migration",
        "consumers": ["migration recovery", "byte verification"],
        "authority": "machine-authority",
        "lifecycle": "ignored by Git: backups, the journal, live and quarantined locks",
        "gedweb": "not stored: `ged_migrate_v3` keeps them in the checkout (gedweb.checkout.v3)",
    },
    {
        "path": ".ged/runtime/active-work/<session-key>.json",
        "producer": "work-selection runtime",
        "consumers": ["Ged path resolution", "governance guards"],
        "authority": "machine-authority",
        "lifecycle": "ignored by Git; one per session: the work item it selected",
        "gedweb": "governance.ActiveWork (one row per project and session key, set through "
                  ".../sessions/{session}/active-work); a checkout's pointers are not imported",
    },
    {
        "path": ".ged/runtime/<work-id>/governance.json",
        "producer": "governance store",
        "consumers": ["mutation, commit and lifecycle guards", "brain status"],
        "authority": "machine-authority",
        "lifecycle": "append-only evidence; revisions only increase",
        "gedweb": "governance.GovernanceRevision (the document, one row per revision) and "
                  "governance.EvidenceRecord (append-only, one row per record)",
    },
    {
        "path": ".ged/work/<work-id>/META.json",
        "producer": "work-selection runtime",
        "consumers": ["governance identity", "work artifact helpers"],
        "authority": "machine-authority",
        "lifecycle": "never changes for the life of the work item",
        "gedweb": "governance.WorkItem (append-only)",
    },
    {
        "path": ".ged/PROJECT.md",
        "producer": "coordinator, through ged_memory (create on substance)",
        "consumers": ["brain durable-data prompt", "planning context"],
        "authority": "durable-data",
        "lifecycle": "current project summary; edited in place after creation",
        "gedweb": "memory.DocumentRevision, path PROJECT.md (kind project)",
    },
    {
        "path": ".ged/reports/*.md",
        "producer": "coordinator via ged_memory",
        "consumers": ["humans", "explicit later planning context"],
        "authority": "durable-data",
        "lifecycle": "created lazily; substantive, read-only reports",
        "gedweb": "memory.DocumentRevision, path reports/<id>.md (kind report)",
    },
    {
        "path": "CONTEXT.md",
        "producer": "coordinator via ged_memory, the domain workflow, or the v3 migration",
        "consumers": ["brain durable-data prompt", "planning context"],
        "authority": "durable-data",
        "lifecycle": "canonical current domain vocabulary",
        "gedweb": "memory.DocumentRevision, path CONTEXT.md (kind context)",
    },
    {
        "path": "docs/adr/*.md",
        "producer": "coordinator via ged_memory (also sync), or the v3 migration",
        "consumers": ["brain durable-data prompt", "planning context"],
        "authority": "durable-data",
        "lifecycle": "sparse, durable decision records",
        "gedweb": "memory.DocumentRevision, path adr/<id>.md (kind adr)",
    },
    {
        "path": ".ged/STANDARDS.md",
        "producer": "explicit standards import",
        "consumers": ["brain approved-instructions prompt"],
        "authority": "approved-instructions",
        "lifecycle": "regenerated only from the bytes of explicitly accepted source files",
        "gedweb": "not stored as a file: rendered from the accepted governance.StandardsImport "
                  "rows (governance.standards) for the context bundle and ged_export",
    },
    {
        "path": ".ged/work/<work-id>/DIRECT.md",
        "producer": "opening a direct-change work item",
        "consumers": ["coordinator", "work handoff"],
        "authority": "work-input",
        "lifecycle": "one concise scope/check record per direct-change work item",
        "gedweb": "governance.WorkFile, name DIRECT.md (append-only versions)",
    },
    {
        "path": ".ged/work/<work-id>/{SPEC,TASKS,TESTS}.md",
        "producer": "opening/planning a planned-change work item",
        "consumers": ["plan binding", "coordinator", "workers/verifier"],
        "authority": "work-input",
        "lifecycle": "planned-change work only; their bytes are bound by plan acceptance",
        "gedweb": "governance.WorkFile, names SPEC.md, TASKS.md, TESTS.md (append-only "
                  "versions; the plan binding reads the newest)",
    },
    {
        "path": ".ged/work/<work-id>/tasks/<task-id>/*",
        "producer": "work engine",
        "consumers": ["retry/recovery", "commit helper", "task context"],
        "authority": "work-input",
        "lifecycle": "scoped to the immutable work item; task ids can repeat across work items",
        "gedweb": "governance.TaskArtifact (BRIEF.md, HISTORY.json, RECOVERY.md; append-only "
                  "versions)",
    },
    {
        "path": ".ged/runtime/<work-id>/{STATE,SESSION-SUMMARY}.md",
        "producer": "explicit ged_memory projection/handoff tool",
        "consumers": ["humans", "cross-session handoff"],
        "authority": "projection",
        "lifecycle": "optional and always regenerable; never parsed as authority",
        "gedweb": "STATE.md is not stored (rendered from the governance state, compared on "
                  "import); SESSION-SUMMARY.md is memory.DocumentRevision, path "
                  "handoff/<work-id>.md",
    },
    {
        "path": ".agents/skills/<name>/SKILL.md",
        "producer": "an explicit ged_skill call",
        "consumers": ["Pi's native skill discovery", "Ged's hash-checked skill matching"],
        "authority": "project-configuration",
        "lifecycle": "created lazily; reusable project knowledge across tasks",
        "gedweb": "governance.Skill (append-only; a skill's bytes never change under its name)",
    },
    {
        "path": ".ged/SKILLS-STATE.json",
        "producer": "an explicit ged_skill call",
        "consumers": ["project skill lifecycle (hash check)"],
        "authority": "machine-authority",
        "lifecycle": "created lazily; provenance and hash registry; never cleaned up per task",
        "gedweb": "governance.Skill's provenance (gedpi_record, sha256); ged_export writes it "
                  "from the skills",
    },
    {
        "path": ".ged/{GLOSSARY,DECISIONS}.md",
        "producer": "v3 compatibility migration only",
        "consumers": ["humans following the pointer to the canonical destination"],
        "authority": "compatibility",
        "lifecycle": "a read-only pointer after migration; never injected into prompts",
        "gedweb": "not stored: ged_import lists them as compatibility pointers, not imported",
    },
]


def inventory() -> list[dict[str, Any]]:
    return [dict(row) for row in ARTIFACTS]


def gedpi_inventory() -> list[dict[str, Any]]:
    return [dict(row) for row in GEDPI_ARTIFACTS]
