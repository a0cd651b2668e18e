"""The floor: the least a server must do to acknowledge a memory append.

A WSGI application with no framework, served by the same gunicorn with the
same gunicorn.conf.py (workers, threads) as GedWeb, so the benchmark's
comparison isolates what GedWeb adds on top of the unavoidable work:

- check the bearer token (SHA-256 of the presented token against one digest);
- read and parse the JSON body (at most 1 MiB) and validate it by the
  contract's rules (known keys only, category pattern, content not blank and
  at most 32,000 UTF-8 bytes without NUL, source 1-128 printable characters);
- in SQLite WAL with synchronous=FULL (GedWeb's settings), BEGIN IMMEDIATE,
  read the project's last (seq, hash), insert the row with the next seq and
  the same hash chain (chain format 2, bench/floor_rules.py, checked
  against gedweb.lib.chain by verify()), commit;
- answer 201 with the entry as JSON.

It leaves out everything else GedWeb does per append: Django's middleware and
DRF, token rows in the database, idempotency keys, corrections, the FTS
index, the MEMORY.md mirror. `bench/run.py` measures it with the same client
threads right after GedWeb. Environment: FLOOR_DATABASE (SQLite file path),
FLOOR_TOKEN (the bearer token).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

from floor_rules import GENESIS_HASH, chained_fields, link, validate

MAX_BODY = 1 << 20
PROJECT = re.compile(r"^/v1/projects/([a-z0-9][a-z0-9_-]{0,63})/memory$")

SCHEMA = """
CREATE TABLE IF NOT EXISTS entry (
    id INTEGER PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    project_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    source TEXT NOT NULL,
    author TEXT NOT NULL,
    created_at TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    UNIQUE (project_id, seq)
);
"""

_local = threading.local()


def connection() -> sqlite3.Connection:
    """One connection per thread, opened like GedWeb's (WAL, synchronous FULL)."""
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = sqlite3.connect(os.environ["FLOOR_DATABASE"], timeout=30, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(SCHEMA)
        _local.conn = conn
    return conn


def _token_digest() -> str:
    return hashlib.sha256(os.environ["FLOOR_TOKEN"].encode()).hexdigest()


def append(project_id: str, body: dict[str, Any]) -> dict[str, Any]:
    conn = connection()
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(
            "SELECT seq, hash FROM entry WHERE project_id = ? ORDER BY seq DESC LIMIT 1",
            (project_id,),
        ).fetchone()
        seq, prev = (row[0] + 1, row[1]) if row else (1, GENESIS_HASH)
        fields = chained_fields(
            author="floor", category=body["category"], content=body["content"],
            created_at=datetime.now(UTC).isoformat(timespec="microseconds"),
            project_id=project_id, seq=seq, source=body.get("source", "operator"),
        )
        digest = link(prev, fields)
        entry_uuid = str(uuid.uuid4())
        conn.execute(
            "INSERT INTO entry (uuid, project_id, seq, category, content, content_sha256,"
            " source, author, created_at, prev_hash, hash)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (entry_uuid, project_id, seq, fields["category"], body["content"],
             fields["content_sha256"], fields["source"], fields["author"],
             fields["created_at"], prev, digest),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return {"id": entry_uuid, **fields, "content": body["content"], "prev_hash": prev,
            "hash": digest, "corrected_by": []}


def _respond(start_response: Any, status: str, payload: Any) -> list[bytes]:
    data = json.dumps(payload, ensure_ascii=False).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data)))])
    return [data]


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
    if path == "/healthz":
        return _respond(start_response, "200 OK", {"status": "ok"})
    match = PROJECT.match(path)
    if match is None:
        return _respond(start_response, "404 Not Found", {"code": "not_found"})
    if method != "POST":
        return _respond(start_response, "405 Method Not Allowed", {"code": "method_not_allowed"})
    presented = environ.get("HTTP_AUTHORIZATION", "").removeprefix("Bearer ")
    if hashlib.sha256(presented.encode()).hexdigest() != _token_digest():
        return _respond(start_response, "401 Unauthorized", {"code": "not_authenticated"})
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = -1
    if not 0 < length <= MAX_BODY:
        return _respond(start_response, "400 Bad Request", {"code": "invalid"})
    try:
        body = json.loads(environ["wsgi.input"].read(length))
    except (ValueError, UnicodeDecodeError):
        return _respond(start_response, "400 Bad Request", {"code": "parse_error"})
    problem = validate(body)
    if problem:
        return _respond(start_response, "400 Bad Request", {"code": "invalid", "message": problem})
    return _respond(start_response, "201 Created", append(match.group(1), body))


def verify(database: str, project_id: str) -> dict[str, Any]:
    """Seqs 1..n and every link of the floor's chain, read back from its database."""
    conn = sqlite3.connect(database)
    try:
        rows = conn.execute(
            "SELECT uuid, seq, category, content, content_sha256, source, author, created_at,"
            " prev_hash, hash FROM entry WHERE project_id = ? ORDER BY seq", (project_id,),
        ).fetchall()
    finally:
        conn.close()
    return verify_rows(project_id, rows)


def verify_rows(project_id: str, rows: Any) -> dict[str, Any]:
    """gedweb.lib.chain's verdict on a floor's rows (uuid, seq, category, content,
    content_sha256, source, author, created_at, prev_hash, hash), in seq order."""
    from gedweb.lib.chain import verify_chain

    entries = (
        {"id": entry_id, "seq": seq, "category": cat, "content": content,
         "content_sha256": digest_of_content, "source": source, "author": author,
         "created_at": created, "prev_hash": prev, "hash": digest, "corrects": None,
         "redacts": None, "project_id": project_id}
        for entry_id, seq, cat, content, digest_of_content, source, author, created, prev, digest
        in rows
    )
    return verify_chain(entries).as_dict()
