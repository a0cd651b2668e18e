"""The `gedweb` commands at parity with the REST API, run as subprocesses against a live server.

Each test works in a project of its own on the session's server
(tests/cli/conftest.py), runs the installed `gedweb` and checks what it
printed against what the server then holds.
"""

from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

import pytest

from gedweb.cli.main import compact_json
from tests.cli.conftest import LiveServer, http_json, run_cli

pytestmark = [pytest.mark.live_server]

DIRECT_WORK = {"summary": "Fix the login button", "minimum_mode": "direct-change",
               "ambiguity": "sufficient", "risk": "low", "clear_scope": True, "bounded": True,
               "reversible": True, "deterministic_check": True}


class Project:
    """A fresh project on the live server, with the environment to reach it."""

    def __init__(self, server: LiveServer, project_id: str) -> None:
        self.server = server
        self.id = project_id
        self.token = server.new_project(project_id)
        self.env = server.cli_env(GEDWEB_TOKEN=self.token)

    def cli(self, *args: str,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=self.env if env is None else env)

    def ok(self, *args: str) -> str:
        result = self.cli(*args)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        return str(result.stdout)

    def json(self, *args: str) -> Any:
        """The command's default output: exactly one compact line of JSON."""
        out = self.ok(*args)
        assert out.endswith("\n") and out.count("\n") == 1, out
        value = json.loads(out)
        # Compact: no indent and no spaces after the separators (test_arguments.py
        # checks that compact_json is that, with terminal controls escaped).
        assert out == compact_json(value) + "\n"
        return value

    def add(self, content: str, category: str = "note", source: str = "cli-test",
            *extra: str) -> dict[str, Any]:
        entry: dict[str, Any] = self.json("memory", "add", "--project", self.id, "--category",
                                          category, "--content", content, "--source", source,
                                          *extra)
        return entry

    def api(self, method: str, path: str, body: Any = None, token: str | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, Any]:
        return http_json(self.server.port, method, f"/v1/projects/{self.id}{path}",
                         token or self.token, body, headers)

    def entries(self) -> list[dict[str, Any]]:
        return self.server.entries(self.id)

    def candidates(self) -> list[dict[str, Any]]:
        status, body = self.api("GET", "/memory/candidates?limit=500")
        assert status == 200, body
        items: list[dict[str, Any]] = body["items"]
        return items


def reviewer(project: Project) -> dict[str, str]:
    """Another principal than the project token that proposes: the admin token, with the
    memory write token (the review gate's four-eyes rule, memory.services.candidate_refusal)."""
    return {**project.env, "GEDWEB_TOKEN": project.server.admin_token}


def assert_refused(result: subprocess.CompletedProcess[str], status: int, code: str) -> None:
    """Exit 1, nothing on stdout, one line on stderr naming the server's status and code."""
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"gedweb: {status} {code}: "), lines


# --- memory -----------------------------------------------------------------------------------


def test_search_finds_every_word_newest_first_and_filters(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-search")
    first = shop.add("Orders stay on PostgreSQL 16.", "decision")
    shop.add("The cache is Redis.", "decision")
    second = shop.add("PostgreSQL orders: vacuum nightly.", "note")
    third = shop.add("Replica of postgresql ORDERS lags two seconds.", "decision")

    found = shop.json("memory", "search", "orders postgresql", "--project", shop.id)
    assert [e["seq"] for e in found["items"]] == [third["seq"], second["seq"], first["seq"]]

    decisions = shop.json("memory", "search", "orders postgresql", "--project", shop.id,
                          "--category", "decision", "--limit", "1")
    assert [e["seq"] for e in decisions["items"]] == [third["seq"]]
    assert decisions["next_cursor"] == third["seq"]

    later = shop.json("memory", "search", "orders", "--project", shop.id, "--since",
                      "2999-01-01T00:00:00Z")
    assert later == {"items": [], "next_cursor": None}

    text = shop.ok("memory", "search", "vacuum", "--project", shop.id, "--format", "text")
    assert text == (f"#{second['seq']} {second['created_at'][:10]} "
                    f"{second['created_at'][11:16]} note [cli-test] "
                    "PostgreSQL orders: vacuum nightly.\n")


def test_recall_ranks_by_any_word_in_any_order_and_prints_scores(
        gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-recall")
    shop.add("The cache is Redis.", "decision")
    deploy = shop.add("Deployment failed because the migrations ran too late.", "bug")
    shop.add("Orders stay on PostgreSQL 16.", "decision")
    # Keyword mode: the same ranking on any engine and model; no word of the
    # question appears whole in the entry ("deploying", "fail").
    found = shop.json("memory", "recall", "why did deploying fail?", "--project", shop.id,
                      "--mode", "keyword")
    assert found["mode"] == "keyword"
    assert [e["seq"] for e in found["items"]] == [deploy["seq"]]
    assert found["items"][0]["ranks"] == {"keyword": 1, "semantic": None}
    assert "hash" not in found["items"][0]  # lean, as every listing of the CLI
    assert found["index"]["head_seq"] == 3
    text = shop.ok("memory", "recall", "why did deploying fail?", "--project", shop.id,
                   "--mode", "keyword", "--format", "text")
    assert text.endswith("bug [cli-test] Deployment failed because the migrations ran too "
                         "late.\n")
    assert float(text.split(" ", 1)[0]) > 0
    # A question far longer than a URL holds goes as a body.
    long = shop.json("memory", "recall", "deployment migrations " * 150, "--project", shop.id,
                     "--limit", "1", "--mode", "keyword")
    assert [e["seq"] for e in long["items"]] == [deploy["seq"]]
    refused = shop.cli("memory", "recall", "x", "--project", shop.id, "--limit", "51")
    assert_refused(refused, 400, "validation_error")


def test_context_with_a_task_brings_the_recalled_entries_within_the_budget(
        gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-context-task")
    deploy = shop.add("Deployment failed because the migrations ran too late.", "bug")
    for index in range(3):
        shop.add(f"Standup note {index}: nothing new.", "note")
    bundle = shop.ok("context", "--project", shop.id, "--task", "why did deploying fail?")
    assert 'file="memory: recalled for the task, best first"' in bundle
    recalled = bundle.split('file="memory: recalled for the task, best first">>>\n', 1)[1]
    assert recalled.startswith(f"- #{deploy['seq']} [bug] (cli-test) Deployment failed")
    small = shop.ok("context", "--project", shop.id, "--task", "why did deploying fail?",
                    "--budget", "5")
    assert 'file="memory: recalled for the task, best first"' not in small
    assert len(small) < len(bundle)
    refused = shop.cli("context", "--project", shop.id, "--budget", "5")
    assert_refused(refused, 400, "validation_error")


def test_get_finds_an_entry_by_seq_or_uuid_with_its_corrections(
    gedweb_server: LiveServer,
) -> None:
    shop = Project(gedweb_server, "cmd-get")
    original = shop.add("Deploys run on Fridays.", "decision")
    correction = shop.add("Deploys never run on Fridays.", "decision", "cli-test",
                          "--corrects", str(original["seq"]))

    by_seq = shop.json("memory", "get", "1", "--project", shop.id)
    by_uuid = shop.json("memory", "get", original["id"], "--project", shop.id)
    assert by_seq == by_uuid
    assert by_seq["content"] == "Deploys run on Fridays."
    assert by_seq["corrected_by"] == [correction["id"]]
    assert "hash" not in by_seq and "prev_hash" not in by_seq

    assert_refused(shop.cli("memory", "get", "99", "--project", shop.id), 404, "not_found")
    assert_refused(shop.cli("memory", "get", "not-a-ref", "--project", shop.id), 404,
                   "not_found")


def test_list_orders_filters_and_follows_the_cursor_both_ways(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-list")
    for number in range(1, 6):
        shop.add(f"entry {number}", "decision" if number % 2 else "note",
                 "ci" if number == 4 else "cli-test")
    shop.add("entry 2 was wrong", "note", "cli-test", "--corrects", "2")

    def seqs(*args: str) -> list[int]:
        return [e["seq"] for e in shop.json("memory", "list", "--project", shop.id,
                                            *args)["items"]]

    assert seqs() == [1, 2, 3, 4, 5, 6]
    assert seqs("--order", "desc", "--limit", "2") == [6, 5]
    # desc pages ask before= the cursor: 3 pages of 2, newest first, nothing twice.
    assert seqs("--order", "desc", "--all", "--limit", "2") == [6, 5, 4, 3, 2, 1]
    assert seqs("--order", "asc", "--all", "--limit", "4") == [1, 2, 3, 4, 5, 6]
    assert seqs("--order", "desc", "--all", "--category", "note", "--limit", "1") == [6, 4, 2]
    assert seqs("--source", "ci") == [4]
    assert seqs("--current") == [1, 3, 4, 5, 6]  # 2 is corrected by 6
    assert seqs("--since", "2999-01-01T00:00:00Z") == []
    assert seqs("--limit", "0") == []
    assert seqs("--limit", "1000") == [1, 2, 3, 4, 5, 6]  # the server caps it at 500

    bad_since = shop.cli("memory", "list", "--project", shop.id, "--since", "last tuesday")
    assert_refused(bad_since, 400, "validation_error")
    assert "since" in bad_since.stderr

    negative = shop.cli("memory", "list", "--project", shop.id, "--limit", "-1")
    assert negative.returncode == 2 and negative.stdout == ""
    assert "argument --limit: must be 0 or more: -1" in negative.stderr


def test_default_json_is_compact_and_leaves_out_the_hashes(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-lean")
    for number in range(3):
        shop.add(f"Payments retry {number} times with backoff.\nSecond line.", "decision")
    stored = shop.entries()

    lean = shop.json("memory", "list", "--project", shop.id)
    hashes = ("prev_hash", "hash", "content_sha256")
    assert lean == {"items": [{k: v for k, v in e.items() if k not in hashes}
                              for e in stored], "next_cursor": None}

    full = shop.json("memory", "list", "--project", shop.id, "--hashes")
    assert full == {"items": stored, "next_cursor": None}
    before = shop.json("--hashes", "memory", "get", "2", "--project", shop.id)
    assert (before["prev_hash"], before["hash"]) == (stored[0]["hash"], stored[1]["hash"])

    # What main printed before: indented JSON with the links; the default is smaller.
    pretty = json.dumps({"items": stored}, ensure_ascii=False, indent=2) + "\n"
    compact = shop.ok("memory", "list", "--project", shop.id)
    assert len(compact.encode()) < 0.75 * len(pretty.encode())

    # verify still checks every link: it downloads with the hashes whatever --format says.
    report = shop.json("memory", "verify", "--project", shop.id)
    assert report == {"ok": True, "entries": 3, "head": stored[-1]["hash"], "first_bad_seq": None,
                      "redacted": 0}
    assert shop.ok("memory", "verify", "--project", shop.id, "--format", "text") == (
        f"ok: 3 entries, head {stored[-1]['hash']}\n")


def test_text_shows_one_line_per_entry(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-text")
    shop.add("Orders stay on PostgreSQL 16.", "decision", "architect")
    shop.add("first line\nsecond line", "note")
    when = [f"{e['created_at'][:10]} {e['created_at'][11:16]}" for e in shop.entries()]

    out = shop.ok("--format", "text", "memory", "list", "--project", shop.id)

    assert out == (f"#1 {when[0]} decision [architect] Orders stay on PostgreSQL 16.\n"
                   f"#2 {when[1]} note [cli-test] first line \u23ce second line\n")
    added = shop.ok("memory", "add", "--project", shop.id, "--category", "fact", "--content",
                    "third", "--format", "text")
    assert added.startswith("#3 ") and added.endswith(" fact [operator] third\n")
    assert len(shop.entries()) == 3


def test_stored_text_cannot_drive_the_terminal(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-controls")
    attack = "clear\x1b[2J\x1b]0;owned\x07 csi\x9b31m bidi\u202eevil"
    shop.add(attack, "note")
    status, body = shop.api("PUT", "/documents/PROJECT.md",
                            {"content": f"# Project\n\nA shop. {attack}\nSecond line.\n"})
    assert status == 201, body
    assert shop.entries()[0]["content"] == attack  # stored as written

    listed = shop.ok("memory", "list", "--project", shop.id, "--format", "text")
    document = shop.ok("documents", "get", "PROJECT.md", "--project", shop.id, "--format", "text")
    as_json = shop.ok("memory", "list", "--project", shop.id)
    for out in (listed, document, as_json):
        assert not any(c in out for c in "\x1b\x07\x9b\u202e"), repr(out)
    assert "clear\\x1b[2J\\x1b]0;owned\\x07 csi\\x9b31m bidi\\u202eevil" in listed
    assert document == ("# Project\n\nA shop. clear\\x1b[2J\\x1b]0;owned\\x07 csi\\x9b31m "
                        "bidi\\u202eevil\nSecond line.\n")
    assert json.loads(as_json)["items"][0]["content"] == attack  # escaped, not changed


# --- candidates -------------------------------------------------------------------------------


def test_candidates_propose_list_approve_and_reject(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-candidates")
    keep = shop.json("candidates", "propose", "--project", shop.id, "--category", "decision",
                     "--content", "Use Stripe for payments.", "--source", "agent-7")
    drop = shop.json("candidates", "propose", "--project", shop.id, "--category", "note",
                     "--content", "Rewrite everything in Rust.")
    assert (keep["status"], keep["source"], drop["source"]) == ("pending", "agent-7", "operator")
    assert shop.entries() == []

    pending = shop.json("candidates", "list", "--project", shop.id, "--status", "pending")
    assert [c["id"] for c in pending["items"]] == [keep["id"], drop["id"]]

    # The token that proposed decides neither: the refusal names the reason.
    for decision in ("approve", "reject"):
        own = shop.cli("candidates", decision, keep["id"], "--project", shop.id)
        assert_refused(own, 403, "review_forbidden")
        assert (f"default proposed this candidate and may not {decision} it"
                in own.stderr), own.stderr
    assert shop.entries() == []

    review = reviewer(shop)
    entry = json.loads(shop.cli("candidates", "approve", keep["id"], "--project", shop.id,
                                env=review).stdout)
    assert (entry["seq"], entry["content"], entry["source"]) == (1, "Use Stripe for payments.",
                                                                 "agent-7")
    assert "hash" not in entry
    rejected = json.loads(shop.cli("candidates", "reject", drop["id"], "--project", shop.id,
                                   env=review).stdout)
    assert rejected["status"] == "rejected"

    stored = shop.entries()
    assert [(e["id"], e["content"]) for e in stored] == [(entry["id"],
                                                          "Use Stripe for payments.")]
    assert {c["id"]: c["status"] for c in shop.candidates()} == {keep["id"]: "approved",
                                                                 drop["id"]: "rejected"}

    # A candidate that is no longer pending is refused, and nothing changes.
    assert_refused(shop.cli("candidates", "approve", keep["id"], "--project", shop.id),
                   409, "conflict")
    assert_refused(shop.cli("candidates", "approve", drop["id"], "--project", shop.id),
                   409, "conflict")
    assert_refused(shop.cli("candidates", "reject", keep["id"], "--project", shop.id),
                   409, "conflict")
    assert_refused(shop.cli("candidates", "approve", "00000000-0000-4000-8000-000000000000",
                            "--project", shop.id), 404, "not_found")
    assert shop.entries() == stored

    everything = shop.json("candidates", "list", "--project", shop.id, "--all", "--limit", "1")
    assert [c["id"] for c in everything["items"]] == [keep["id"], drop["id"]]
    assert shop.json("candidates", "list", "--project", shop.id, "--status",
                     "pending")["items"] == []

    # The proposer withdraws its own; no one else may.
    mine = shop.json("candidates", "propose", "--project", shop.id, "--category", "note",
                     "--content", "On second thought, no.")
    theirs = shop.cli("candidates", "withdraw", mine["id"], "--project", shop.id, env=review)
    assert_refused(theirs, 403, "review_forbidden")
    assert "only the candidate's proposer (default) may withdraw it" in theirs.stderr
    withdrawn = shop.json("candidates", "withdraw", mine["id"], "--project", shop.id)
    assert (withdrawn["status"], withdrawn["resolved_by"]) == ("withdrawn", "default")
    assert [c["id"] for c in shop.json("candidates", "list", "--project", shop.id, "--status",
                                       "withdrawn")["items"]] == [mine["id"]]
    assert shop.entries() == stored
    text = shop.ok("candidates", "list", "--project", shop.id, "--format", "text")
    assert text.splitlines()[1].startswith(f"{drop['id']} ")
    assert text.splitlines()[1].endswith(" rejected note [operator] Rewrite everything in Rust.")


def test_approval_needs_the_memory_token_and_changes_nothing_without_it(
    gedweb_server: LiveServer,
) -> None:
    shop = Project(gedweb_server, "cmd-approve-boundary")
    candidate = shop.json("candidates", "propose", "--project", shop.id, "--category", "note",
                          "--content", "needs review")
    env = dict(shop.env)
    del env["GEDWEB_MEMORY_TOKEN"]

    refused = shop.cli("candidates", "approve", candidate["id"], "--project", shop.id, env=env)

    assert_refused(refused, 403, "memory_write_forbidden")
    assert shop.entries() == []
    assert [c["status"] for c in shop.candidates()] == ["pending"]


# --- documents, work, standards ---------------------------------------------------------------


def test_documents_list_and_get_with_revisions(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-documents")
    for path, content in (("PROJECT.md", "# Project\n\nA shop for used bicycles.\n"),
                          ("adr/0001-postgres.md", "# ADR 1\n\nUse PostgreSQL for scale."),
                          ("adr/0002-redis.md", "# ADR 2\n\nUse Redis for the cache.\n")):
        status, body = shop.api("PUT", f"/documents/{path}", {"content": content})
        assert status == 201, body
    status, body = shop.api("PUT", "/documents/adr/0001-postgres.md",
                            {"content": "# ADR 1\n\nUse PostgreSQL 16 for scale.\n",
                             "expected_revision": 1})
    assert status == 200, body

    adrs = shop.json("documents", "list", "--project", shop.id, "--prefix", "adr/")
    assert [(d["path"], d["revision"]) for d in adrs["items"]] == [
        ("adr/0001-postgres.md", 2), ("adr/0002-redis.md", 1)]
    assert len(shop.json("documents", "list", "--project", shop.id)["items"]) == 3

    newest = shop.json("documents", "get", "adr/0001-postgres.md", "--project", shop.id)
    assert (newest["revision"], newest["content"]) == (2, "# ADR 1\n\nUse PostgreSQL 16 for "
                                                          "scale.\n")
    # Text is the document itself, ending with a newline even when it has none.
    first = shop.ok("documents", "get", "adr/0001-postgres.md", "--project", shop.id,
                    "--revision", "1", "--format", "text")
    assert first == "# ADR 1\n\nUse PostgreSQL for scale.\n"

    listed = shop.ok("documents", "list", "--project", shop.id, "--prefix", "adr/0002",
                     "--format", "text")
    assert listed.startswith("adr/0002-redis.md r1 ") and listed.count("\n") == 1
    assert f"sha256:{adrs['items'][1]['sha256'][:12]}" in listed

    assert_refused(shop.cli("documents", "get", "adr/0009-none.md", "--project", shop.id),
                   404, "not_found")
    assert_refused(shop.cli("documents", "get", "adr/0001-postgres.md", "--project", shop.id,
                            "--revision", "7"), 404, "not_found")
    outside = shop.cli("documents", "get", "Audit", "--project", shop.id)
    assert_refused(outside, 400, "validation_error")


def test_work_list_and_get(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-work")
    opened = []
    for summary in ("Fix the login button", "Tidy the footer"):
        status, body = shop.api("POST", "/work", {**DIRECT_WORK, "summary": summary})
        assert status == 201, body
        opened.append(body)

    listing = shop.json("work", "list", "--project", shop.id)
    assert [(w["work_id"], w["summary"], w["mode"]) for w in listing["items"]] == [
        (o["work_id"], o["meta"]["summary"], "direct-change") for o in opened]
    paged = shop.json("work", "list", "--project", shop.id, "--all", "--limit", "1")
    assert [w["work_id"] for w in paged["items"]] == [o["work_id"] for o in opened]
    first = shop.json("work", "list", "--project", shop.id, "--limit", "1")
    assert first["next_cursor"] == opened[0]["work_id"]

    detail = shop.json("work", "get", opened[1]["work_id"], "--project", shop.id)
    # The read says which governance records a checkout brought (none here).
    assert detail == {**opened[1], "provenance": {
        "approvals": [], "evidence": [], "lifecycle": None, "lifecycle_transitions": []}}
    text = shop.ok("work", "get", opened[1]["work_id"], "--project", shop.id, "--format", "text")
    assert text.startswith(f"{opened[1]['work_id']} ")
    assert text.endswith(" direct-change active Tidy the footer\n")
    lines = shop.ok("work", "list", "--project", shop.id, "--format", "text").splitlines()
    assert len(lines) == 2 and lines[0].endswith(" direct-change [default] Fix the login button")

    assert_refused(shop.cli("work", "get", "fix-20260101000000000-" + "0" * 32, "--project",
                            shop.id), 404, "not_found")


def test_standards_prints_the_accepted_text(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-standards")
    assert_refused(shop.cli("standards", "--project", shop.id), 404, "not_found")
    status, body = shop.api("POST", "/standards/imports",
                            {"path": "AGENTS.md", "content": "# Agents\n\nRun the tests first.\n"})
    assert status == 201, body
    status, accepted = shop.api("POST", f"/standards/imports/{body['id']}/accept",
                                {"sha256": body["sha256"]}, token=gedweb_server.admin_token)
    assert status == 200, accepted

    out = shop.ok("standards", "--project", shop.id)

    assert "Run the tests first." in out and out.endswith("\n")


# --- Ferryman's lines, unchanged ------------------------------------------------------------


def ferryman_env(server: LiveServer, **variables: str) -> dict[str, str]:
    """The environment of a Ferryman user: none of GedWeb's variables."""
    env = {k: v for k, v in server.cli_env().items() if not k.startswith("GEDWEB_")}
    env.update(variables)
    return env


def test_a_ferryman_users_lines_work_with_gedweb_as_the_binary(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-ferryman")
    env = ferryman_env(gedweb_server)
    endpoint, token, memory = gedweb_server.url, shop.token, gedweb_server.memory_token

    added = run_cli("memory", "add", "--project", shop.id, "--category", "decision",
                    "--content", "Ferry writes here now.", "--source", "ferry",
                    "--endpoint", endpoint, "--token", token, "--memory-token", memory, env=env)
    assert added.returncode == 0, added.stderr
    flags_first = run_cli("--endpoint", endpoint, "--token", token, "--memory-token", memory,
                          "memory", "add", "--project", shop.id, "--category", "note",
                          "--content", "Flags before the command.", "--source", "ferry",
                          env=env)
    assert flags_first.returncode == 0, flags_first.stderr
    stored = shop.entries()
    assert [(e["category"], e["content"], e["source"]) for e in stored] == [
        ("decision", "Ferry writes here now.", "ferry"),
        ("note", "Flags before the command.", "ferry")]
    assert json.loads(added.stdout)["id"] == stored[0]["id"]
    assert added.stdout.count("\n") == 1  # compact JSON, as ferry prints the body

    listed = run_cli("memory", "list", "--project", shop.id, "--limit", "1000",
                     "--endpoint", endpoint, "--token", token, env=env)
    assert listed.returncode == 0, listed.stderr
    assert [e["id"] for e in json.loads(listed.stdout)["items"]] == [e["id"] for e in stored]


def test_ferrymans_token_variables_reach_the_server(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-ferryman-env")
    env = ferryman_env(gedweb_server, FERRYMAN_TOKEN=shop.token,
                       FERRYMAN_MEMORY_TOKEN=gedweb_server.memory_token)

    added = run_cli("memory", "add", "--project", shop.id, "--category", "note", "--content",
                    "from FERRYMAN_TOKEN", "--source", "ferry", "--endpoint",
                    gedweb_server.url, env=env)

    assert added.returncode == 0, added.stderr
    assert [(e["content"], e["author"]) for e in shop.entries()] == [("from FERRYMAN_TOKEN",
                                                                      "default")]
    without_memory_token = {k: v for k, v in env.items() if k != "FERRYMAN_MEMORY_TOKEN"}
    refused = run_cli("memory", "add", "--project", shop.id, "--category", "note", "--content",
                      "no write rights", "--endpoint", gedweb_server.url,
                      env=without_memory_token)
    assert_refused(refused, 403, "memory_write_forbidden")
    assert len(shop.entries()) == 1


# --- no token in any message ------------------------------------------------------------------


def test_no_error_of_the_new_commands_repeats_a_token(gedweb_server: LiveServer) -> None:
    shop = Project(gedweb_server, "cmd-secrets")
    memory_token = gedweb_server.memory_token
    candidate = shop.json("candidates", "propose", "--project", shop.id, "--category", "note",
                          "--content", "x")
    shop.json("candidates", "withdraw", candidate["id"], "--project", shop.id)
    ferry_env = ferryman_env(gedweb_server, FERRYMAN_TOKEN=shop.token,
                             FERRYMAN_MEMORY_TOKEN=memory_token, GEDWEB_URL=gedweb_server.url)
    on_line = ["--token", shop.token, "--memory-token", memory_token]
    cases: list[tuple[list[str], dict[str, str], int]] = [
        # server errors
        (["memory", "get", "99", "--project", shop.id, *on_line], shop.env, 1),
        (["memory", "get", shop.token, "--project", shop.id], shop.env, 1),
        (["memory", "search", memory_token, "--project", shop.id, "--since", "soon"],
         shop.env, 1),
        (["memory", "list", "--project", shop.id, "--since", shop.token], ferry_env, 1),
        (["candidates", "approve", candidate["id"], "--project", shop.id, *on_line],
         shop.env, 1),
        (["candidates", "reject", shop.token, "--project", shop.id], ferry_env, 1),
        (["documents", "get", shop.token, "--project", shop.id], shop.env, 1),
        (["documents", "list", "--project", shop.token, *on_line], shop.env, 1),
        (["work", "get", memory_token, "--project", shop.id], ferry_env, 1),
        (["candidates", "list", "--project", shop.id, "--token", "gwp_wrong" + shop.token],
         shop.env, 1),
        # usage errors
        (["memory", "list", "--project", shop.id, "--limit", shop.token, *on_line], shop.env, 2),
        (["memory", "search", "--project", shop.id, *on_line], shop.env, 2),
        (["candidates", "list", "--project", shop.id, "--status", memory_token], ferry_env, 2),
        (["candidates", "approve", "--project", shop.id, shop.token, "extra"], shop.env, 2),
        (["documents", "get", "PROJECT.md", "--project", shop.id, "--revision", memory_token],
         shop.env, 2),
        (["work", "list", "--project", shop.id, "--format", shop.token], ferry_env, 2),
        (["work", "list", "--project", shop.id, "--all", "--limit", "0", *on_line],
         shop.env, 2),
        ([shop.token, "--endpoint", gedweb_server.url], ferry_env, 2),
    ]
    since = ('invalid input: since {"since":["Datetime has wrong format. Use one of these '
             'formats instead: YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."]}')
    # Each refusal's own reason (a token in it shows as [secret]), not just any error line.
    reasons = [
        "gedweb: 404 not_found: not found",
        "gedweb: 404 not_found: not found",
        f"gedweb: 400 validation_error: {since}",
        f"gedweb: 400 validation_error: {since}",
        "gedweb: 409 conflict: candidate is withdrawn, not pending",
        "gedweb: 404 not_found: not found",
        'gedweb: 400 validation_error: invalid input: path {"path":["must be PROJECT.md, '
        "CONTEXT.md, adr/<id>.md, reports/<id>.md or handoff/<work_id>.md, where <id> matches "
        '^[a-z0-9][a-z0-9._-]{0,127}$ and <work_id> is a generated work id"]}',
        "gedweb: 404 not_found: not found",
        "gedweb: 404 not_found: not found",
        "gedweb: 401 unauthenticated: missing, malformed, unknown or revoked bearer token",
        "gedweb memory list: error: argument --limit: not a whole number: '[secret]'",
        "gedweb memory search: error: the following arguments are required: QUERY",
        "gedweb candidates list: error: argument --status: invalid choice: '[secret]' (choose "
        "from 'pending', 'approved', 'rejected', 'withdrawn')",
        "gedweb: error: unrecognized arguments: extra",
        "gedweb documents get: error: argument --revision: not an integer: '[secret]'",
        "gedweb work list: error: argument --format: invalid choice: '[secret]' (choose from "
        "'json', 'text')",
        "gedweb: error: --limit 0 with --all: a page size must be at least 1",
        "gedweb: error: argument COMMAND: invalid choice: '[secret]' (choose from 'memory', "
        "'candidates', 'documents', 'work', 'context', 'standards', 'mcp', 'init', 'hook', "
        "'push', 'pull')",
    ]
    for (argv, env, exit_code), reason in zip(cases, reasons, strict=True):
        result = run_cli(*argv, env=env)
        assert result.returncode == exit_code, (argv, result.stderr)
        assert result.stderr.splitlines()[-1] == reason, (argv, result.stderr)
        for secret in (shop.token, memory_token):
            assert secret not in result.stderr and secret not in result.stdout, argv
    assert shop.entries() == []


def test_a_network_failure_of_a_new_command_exits_3(gedweb_server: LiveServer) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = gedweb_server.cli_env(GEDWEB_URL=f"http://127.0.0.1:{port}")

    result = run_cli("work", "list", "--project", gedweb_server.project, env=env)

    assert result.returncode == 3 and result.stdout == ""
    assert result.stderr.startswith(f"gedweb: cannot reach http://127.0.0.1:{port}: ")
    assert len(result.stderr.splitlines()) == 1

    # The message names the URL; a password in it is a credential and is left out.
    with_password = run_cli("documents", "list", "--project", gedweb_server.project,
                            "--endpoint", f"http://agent:{gedweb_server.memory_token}"
                                          f"@127.0.0.1:{port}", env=env)
    assert with_password.returncode == 3
    assert with_password.stderr.startswith("gedweb: cannot reach http://agent:[secret]@127.0.0.1")
    assert gedweb_server.memory_token not in with_password.stderr
