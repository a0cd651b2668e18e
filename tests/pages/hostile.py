"""A site seeded with text that breaks layouts, for the browser tests of every page.

seed.py's realistic project plus what agents really write: a 400-character
unbroken token, a table wider than any phone, a long line of code, a long
URL, GedPi files with front matter and `Key: value` lines. Written through
GedWeb's own services (as the API would), in the database of a server started
as `make run` starts it: tests/pages/test_layout.py runs

    manage.py shell -c "from tests.pages.hostile import main; main()"

against that server's environment and reads the JSON this prints: the
accounts and every page's path.
"""

from __future__ import annotations

import json
from typing import Any

from tests.pages.seed import PASSWORD

TOKEN = "k" + "9f3a" * 100  # 401 characters with no place to break
WIDE_TABLE = ("| " + " | ".join(f"column-{n}-with-a-long-heading" for n in range(10)) + " |\n"
              + "|" + " --- |" * 10 + "\n"
              + "| " + " | ".join(f"value-{n}-that-is-also-long" for n in range(10)) + " |\n")
LONG_CODE = "```\n" + "x = compute(" + ", ".join(f"argument_{n}" for n in range(40)) + ")\n```\n"
LONG_URL = "https://example.org/" + "/".join(f"segment-{n}" for n in range(30))
HOSTILE_TEXT = (f"Token seen in a log line: {TOKEN}\n\n{WIDE_TABLE}\n{LONG_CODE}\n"
                f"See {LONG_URL} and `{TOKEN[:120]}`.\n")


def seed() -> dict[str, Any]:
    from django.contrib.auth.models import User

    from governance import services as governance_services
    from governance.context import context_deliver
    from governance.models import ContextDelivery
    from governance.skills import skill_put
    from memory import services
    from memory.documents import document_put
    from memory.models import Membership
    from tests.pages.seed import SKILL, seed_project

    project, _ = services.project_create(project_id="alpha", name="Web shop " + "w" * 80)
    seeded = seed_project(project)
    hostile = services.memory_entry_create(project=project, author="agent-claude",
                                           category="finding", source="log-scanner",
                                           content=HOSTILE_TEXT).entry
    services.memory_entry_create(project=project, author="agent-" + "a" * 58,
                                 category="note." + "n" * 58, source="s" * 120,
                                 content=TOKEN).entry
    document_put(project=project, path="reports/hostile-layout.md", content="# Wide\n\n"
                 + HOSTILE_TEXT, author="agent-claude")
    work = seeded.work
    assert work is not None
    governance_services.work_file_write(work=work, name="DIRECT.md", author="agent-claude",
                                        content="# Direct change\n\n" + HOSTILE_TEXT)
    skill_put(project=project, name="long-" + "s" * 50, reason="hostile layout", author="a",
              source=LONG_URL,
              content=SKILL.format(name="long-" + "s" * 50, title="Long " + TOKEN[:200],
                                   description="Describes " + TOKEN[:300]))
    context_deliver(project=project, work=work, author="agent-" + "c" * 58, output_format="text")
    # The review queue, the compare page and a delivered bundle, with the same hostile text.
    services.candidate_create(project=project, author="agent-" + "p" * 58, category="finding",
                              source="s" * 120, content=HOSTILE_TEXT)
    decided = services.candidate_create(project=project, author="agent-claude", category="note",
                                        content=TOKEN)
    services.candidate_approve(project=project, candidate=decided, by="user:" + "o" * 50)
    document_put(project=project, path="adr/0002-hostile.md", author="agent-claude",
                 content="# ADR 0002\n\nFirst.\n")
    document_put(project=project, path="adr/0002-hostile.md", author="agent-claude",
                 content="# ADR 0002\n\n" + HOSTILE_TEXT, expected_revision=1)
    delivery = ContextDelivery.objects.filter(project=project).order_by("-id")[0].pk
    users = {}
    for name, role in (("vera", Membership.Role.VIEWER), ("otto", Membership.Role.OPERATOR)):
        users[name] = User.objects.create_user(name, f"{name}@example.org", PASSWORD)
        Membership.objects.create(user=users[name], project=project, role=role)
    p = project.pk
    accepted = seeded.extra["accepted"]
    pages = [
        "/", f"/p/{p}/", f"/p/{p}/memory/", f"/p/{p}/memory/?q=postgresql",
        f"/p/{p}/memory/{hostile.seq}", f"/p/{p}/memory/{seeded.correction.seq}",  # type: ignore[union-attr]
        f"/p/{p}/mirror/", f"/p/{p}/documents/", f"/p/{p}/documents/PROJECT.md",
        f"/p/{p}/documents/reports/hostile-layout.md",
        f"/p/{p}/documents/adr/0001-orders-on-postgresql.md?revision=1",
        f"/p/{p}/work/", f"/p/{p}/work/{work.work_id}/", f"/p/{p}/work/{work.work_id}/revisions/1",
        f"/p/{p}/standards/", f"/p/{p}/standards/{accepted.public_id}", f"/p/{p}/skills/",
        f"/p/{p}/skills/fix-flaky-test", f"/p/{p}/skills/long-{'s' * 50}", f"/p/{p}/context/",
        f"/p/{p}/review/", f"/p/{p}/review/?status=resolved",
        f"/p/{p}/compare/adr/0002-hostile.md?from=1&to=2", f"/p/{p}/context/{delivery}",
        f"/p/{p}/memory/authors/agent-{'a' * 58}/", f"/p/{p}/memory/authors/agent-claude/",
        f"/p/{p}/work/{work.work_id}/revisions/2",
    ]
    from memory.models import MemoryEntry

    return {"project": p, "users": sorted(users), "password": PASSWORD, "pages": pages,
            "work": work.work_id, "entries": MemoryEntry.objects.filter(project=project).count(),
            "missing": [f"/p/{p}/memory/99999", "/p/no-such-project/", "/no/such/route"]}


def main() -> None:
    print(json.dumps(seed()))
