"""What `make run` prints when its workers are ready: where things are, and what is on.

gunicorn.conf.py's when_ready hook prints it once, from the master, so a
newcomer need not guess the URLs, the demo project's token, or why creating
a project answers 401 (no admin token set). It names no secret: the admin
token is "set" or "not set", and the database URL shows no password. The
demo token is the documented development token (README.md), and the demo
project exists only outside production.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from memory.demo import DEMO_PROJECT_ID, DEMO_TOKEN

WILDCARDS = {"0.0.0.0", "::", "[::]", ""}  # nosec B104: names the addresses, binds none


def base_url(bind: str) -> str:
    """http://host:port for a gunicorn bind string; a wildcard address becomes 127.0.0.1."""
    if bind.startswith(("unix:", "fd://")):
        return bind
    host, _, port = bind.rpartition(":")
    if not host:  # a bare port
        host, port = "127.0.0.1", bind
    if host in WILDCARDS:
        host = "127.0.0.1"
    return f"http://{host}:{port}"


def _database(database: dict[str, Any]) -> str:
    if "sqlite" in database["ENGINE"]:
        return f"SQLite {database['NAME']}"
    where = f"{database.get('HOST') or 'localhost'}:{database.get('PORT') or 5432}"
    return f"PostgreSQL {database['NAME']} at {where} as {database.get('USER') or '-'}"


def startup_banner(bind: str) -> str:
    base = base_url(bind)
    lines = [
        "",
        f"GedWeb is ready at {base}/",
        f"  pages       {base}/   (sign in at {base}/accounts/login/)",
        f"  admin       {base}/admin/",
        f"  API docs    {base}/v1/docs   (schema {base}/v1/schema)",
        f"  MCP         {base}/mcp",
        f"  health      {base}/healthz",
    ]
    if settings.DEMO_PROJECT:
        lines.append(f"  demo        project {DEMO_PROJECT_ID!r}, token {DEMO_TOKEN!r}: curl -H "
                     f"'Authorization: Bearer {DEMO_TOKEN}' {base}/v1/projects/"
                     f"{DEMO_PROJECT_ID}/memory")
    else:
        lines.append("  demo        off (GEDWEB_DEMO_PROJECT)")
    if settings.ADMIN_TOKEN:
        lines.append("  admin token set (GEDWEB_ADMIN_TOKEN): POST /v1/projects creates projects")
    else:
        lines.append("  admin token NOT SET: creating projects over the API is off; set one with "
                     "export GEDWEB_ADMIN_TOKEN=$(python3 -c 'import secrets; "
                     "print(secrets.token_urlsafe(32))') and restart, or use "
                     "`manage.py project create`")
    lines += [
        f"  data        {settings.DATA_DIR}",
        f"  database    {_database(settings.DATABASES['default'])}",
        "  debug       " + ("ON (DJANGO_DEBUG=true): never on a server others can reach"
                           if settings.DEBUG else "off (DJANGO_DEBUG=true turns it on)"),
        "",
    ]
    return "\n".join(lines)
