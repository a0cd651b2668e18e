"""Agent text on the pages: the renderer and the pages at each kind's size limit (issue 34 §5).

The target (docs/performance.md, "Markdown on the pages"): every page renders
any stored text, up to its kind's size limit, in at most 250 ms.

1. The renderer alone (memory.rendering.render, no cache), for each kind at
   its limit (a memory entry or candidate 32,000 bytes, a skill 100,000
   characters, a document 200,000, a work file 1,000,000; past
   MAX_RENDER_CHARS, 64,000, as plain text): an
   ordinary text and each hostile text of HOSTILE, the slowest named.
2. The pages, on a fresh SQLite database with the page tests' seeded
   project, through Django's test client: the review page with a hostile
   candidate, the entry page with a hostile entry, a document page with a
   hostile ADR, the skill page with a hostile skill and the work page with a
   hostile work file, each at its kind's limit; the first view (rendered)
   and the next (from the cache).

Median of --rounds. Prints a table, and one JSON line with --json.

    .venv/bin/python bench/markdown_pages.py [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGET_MS = 250.0

# Texts that made Python-Markdown rescan a block at every match (issue 34:
# 1.5-7.5 s for 32 KB each), and the ones that stay costliest for cmark-gfm
# and nh3. Each unit is repeated to the kind's size.
HOSTILE = {
    "code-spans": "``a`", "rules": "***\n", "setext": "a\n=\n", "headings": "# a\n",
    "emphasis": "*_", "emphasis-words": "*a ", "images": "![", "brackets": "[a ",
    "links": "[a](", "tags": "<a ", "list-items": "- a\n", "paragraphs": "*a\n\n",
    "table-rows": "|a|b|\n", "quotes": "> a\n", "entities": "&#", "backslashes": "\\",
    "raw-blocks": "<div>\n\n", "deep-quotes": ">",
}
ORDINARY = ("## A decision\n\nOrders stay on **PostgreSQL 16**; see [the ADR]"
            "(https://example.org/adr/1) and `make test`.\n\n- one point\n- another, *stressed*\n\n"
            "| key | value |\n| --- | --- |\n| a | 1 |\n\n```python\nprint('<b>')\n```\n\n")
# Each kind's limit, in characters of ASCII text (an entry's is 32,000 UTF-8 bytes).
KINDS = {"entry": 32_000, "render limit": 64_000, "skill": 100_000, "document": 200_000,
         "work file": 1_000_000}


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def median_ms(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def renderer(rounds: int) -> list[dict[str, Any]]:
    from memory import rendering

    rows = []
    for kind, size in KINDS.items():
        ordinary = fill(ORDINARY, size)
        worst_name, worst = "", 0.0
        for name, unit in HOSTILE.items():
            text = fill(unit, size)
            took = median_ms(lambda text=text: rendering.render(text, level=2), rounds)
            if took > worst:
                worst_name, worst = name, took
        rows.append({
            "kind": kind, "chars": size,
            "ordinary_ms": round(median_ms(lambda: rendering.render(ordinary, level=2), rounds), 1),
            "ordinary_as": "plain" if not rendering.is_renderable(ordinary) else "markdown",
            "worst_hostile": worst_name, "worst_ms": round(worst, 1),
        })
    return rows


def pages(rounds: int) -> list[dict[str, Any]]:
    from django.conf import settings
    from django.core.cache import caches
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import override_settings

    from memory import rendering as rendering_module

    # "cached" is what a REDIS_URL deployment reads; a process-local cache
    # stands in for Redis here (without REDIS_URL the site keeps none).
    local = override_settings(CACHES={**settings.CACHES, rendering_module.CACHE: {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "bench"}})
    local.enable()

    from governance import services as governance_services
    from governance.skills import skill_put
    from memory import rendering, services
    from memory.documents import document_put
    from memory.models import Membership
    from tests.pages.seed import SKILL, seed_project

    call_command("migrate", verbosity=0)
    project, _ = services.project_create(project_id="bench", name="Bench")
    seeded = seed_project(project)
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("otto", "otto@example.org", "pw-bench-only")
    Membership.objects.create(user=user, project=project, role=Membership.Role.OPERATOR)
    client = Client()
    client.force_login(user)

    # The costliest hostile units for each kind (from the renderer's table).
    entry_text = fill("*_", 31_900) + "\n\nend\n"
    candidate = services.candidate_create(project=project, author="agent", category="note",
                                          content=fill("*_", 31_900) + "\n\nend\n")
    entry = services.memory_entry_create(project=project, author="agent", category="note",
                                         content=entry_text).entry
    document_put(project=project, path="adr/0099-hostile.md", author="agent",
                 content=fill("*_", 63_900) + "\n\nend\n")
    document_put(project=project, path="adr/0100-longest.md", author="agent",
                 content=fill("*_", 199_000) + "\n\nend\n")
    skill = SKILL.format(name="hostile", title="Hostile", description="A hostile skill body")
    skill_put(project=project, name="hostile", content=skill + fill("*_", 99_000 - len(skill)),
              reason="bench", source=None, author="agent")
    work = seeded.work
    name = next(iter(governance_services.allowed_files(work)))
    governance_services.work_file_write(work=work, name=name, author="agent",
                                        content=fill("*_", 999_000))
    urls = {
        "review page (candidate, 32,000 bytes)": "/p/bench/review/",
        "entry page (32,000 bytes)": f"/p/bench/memory/{entry.seq}",
        "document page (ADR, 64,000 chars)": "/p/bench/documents/adr/0099-hostile.md",
        "document page (ADR, 200,000 chars)": "/p/bench/documents/adr/0100-longest.md",
        "skill page (100,000 chars)": "/p/bench/skills/hostile",
        "work page (work file, 1,000,000 chars)": f"/p/bench/work/{work.work_id}/",
    }
    del candidate
    rows = []
    for label, url in urls.items():
        def get(url: str = url) -> None:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)

        def cold(get: Callable[[], None] = get) -> None:
            caches[rendering.CACHE].clear()
            get()

        get()  # the page's own first-request costs (templates, queries compiled)
        rows.append({"page": label, "first_view_ms": round(median_ms(cold, rounds), 1),
                     "cached_ms": round(median_ms(get, rounds), 1)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gedweb-markdown-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch / 'bench.sqlite3'}"
    os.environ["GEDWEB_DATA_DIR"] = str(scratch / "data")
    os.environ["GEDWEB_MEMORY_ROOT"] = str(scratch / "mirror")
    os.environ["DJANGO_ALLOWED_HOSTS"] = "testserver"
    os.environ.pop("REDIS_URL", None)  # each process's own cache: no shared state
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
    sys.path.insert(0, str(HERE.parent))
    import django

    django.setup()
    import logging

    logging.disable(logging.WARNING)  # logins and the missing static directory
    render_rows = renderer(args.rounds)
    page_rows = pages(args.rounds)
    print(f"Markdown on the pages: Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}, median of {args.rounds}; target {TARGET_MS:.0f} ms")
    print(f"{'kind':<12} {'chars':>9} {'ordinary':>10}  {'as':<8} {'worst hostile':>14}  text")
    for row in render_rows:
        print(f"{row['kind']:<12} {row['chars']:>9,} {row['ordinary_ms']:>8.1f}ms  "
              f"{row['ordinary_as']:<8} {row['worst_ms']:>12.1f}ms  {row['worst_hostile']}")
    print(f"{'page':<42} {'first view':>11} {'cached':>9}")
    over = []
    for row in page_rows:
        print(f"{row['page']:<42} {row['first_view_ms']:>9.1f}ms {row['cached_ms']:>7.1f}ms")
        if row["first_view_ms"] > TARGET_MS:
            over.append(row["page"])
    print("all within the target" if not over else f"over the target: {', '.join(over)}")
    if args.json:
        print(json.dumps({"renderer": render_rows, "pages": page_rows}))


if __name__ == "__main__":
    main()
