"""The browser tests' site: run by tests/pages/live.py inside the live server's database.

alpha is the realistic project (tests/pages/seed.py) with a candidate for
its operator to approve; beta holds a word only its own members may see;
gamma holds the stored script-injection corpus and a candidate its viewer
will try to approve with a forged POST. vera views alpha and gamma, otto
operates alpha, root is a superuser.
"""

from __future__ import annotations

import json
from typing import Any

from tests.pages.seed import PASSWORD


def _store_corpus(seeded: Any) -> list[str]:
    from governance import services as governance_services
    from governance.standards import standards_import_submit
    from memory import services
    from memory.documents import document_put
    from tests.pages.xss import PAYLOADS

    project = seeded.project
    p = project.pk
    first = None
    for payload in PAYLOADS:
        entry = services.memory_entry_create(project=project, author="mallory", category="xss",
                                             source="attacker", content=payload).entry
        first = first or entry
    corpus = "\n\n".join(PAYLOADS)
    document_put(project=project, path="adr/0099-xss.md", author="mallory",
                 content="# XSS corpus\n\n" + corpus)
    document_put(project=project, path="PROJECT.md", author="mallory", expected_revision=1,
                 content="# Corpus\n\n" + corpus)
    work = seeded.work
    governance_services.work_file_write(work=work, name="DIRECT.md", author="mallory",
                                        content="# Direct\n\n" + corpus)
    row, _ = standards_import_submit(project=project, path="GEMINI.md", author="mallory",
                                     content=corpus)
    return [
        f"/p/{p}/", f"/p/{p}/memory/?category=xss", f"/p/{p}/memory/?q=xss", f"/p/{p}/mirror/",
        f"/p/{p}/documents/adr/0099-xss.md", f"/p/{p}/work/{work.work_id}/",
        f"/p/{p}/standards/{row.public_id}", f"/p/{p}/standards/",
    ] + [f"/p/{p}/memory/{seq}" for seq in range(first.seq, first.seq + len(PAYLOADS))]


def seed() -> dict[str, Any]:
    from django.contrib.auth.models import User

    from governance.models import ContextDelivery
    from memory import services
    from memory.models import Membership
    from tests.pages.seed import seed_project

    alpha = seed_project(services.project_create(project_id="alpha", name="Web shop")[0])
    beta = services.project_create(project_id="beta", name="Secret lab")[0]
    services.memory_entry_create(project=beta, author="b", category="secret", content="zanzibar")
    gamma = seed_project(services.project_create(project_id="gamma", name="Corpus")[0])
    xss_pages = _store_corpus(gamma)

    approve = services.candidate_create(
        project=alpha.project, author="agent-codex", category="idea", source="planner",
        content="Cache the **formatted price** per currency for the catalogue page.")
    forged = services.candidate_create(
        project=gamma.project, author="agent-codex", category="idea", source="planner",
        content="Only an operator may turn this into memory.")

    vera = User.objects.create_user("vera", "vera@example.org", PASSWORD)
    otto = User.objects.create_user("otto", "otto@example.org", PASSWORD)
    User.objects.create_superuser("root", "root@example.org", PASSWORD)
    Membership.objects.create(user=vera, project=alpha.project)
    Membership.objects.create(user=vera, project=gamma.project)
    Membership.objects.create(user=otto, project=alpha.project, role=Membership.Role.OPERATOR)

    delivery = ContextDelivery.objects.filter(project=alpha.project, format="text"
                                              ).order_by("id").first()
    assert delivery is not None
    return {"password": PASSWORD, "xss_pages": xss_pages,
            "approve": {"id": approve.pk, "uuid": str(approve.uuid)},
            "forged": {"id": forged.pk, "uuid": str(forged.uuid)},
            "delivery": {"id": delivery.pk, "sha256": delivery.sha256}}


def main() -> None:
    print(json.dumps(seed()))
