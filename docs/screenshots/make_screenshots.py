"""Screenshots of the team pages, for README.md and docs/pages.md.

Seeds a throwaway SQLite database with a realistic demo project (through
GedWeb's services, as agents would write it), serves it on 127.0.0.1 and
saves PNGs of the main pages next to this file with Debian's chromium, on a
desktop (NAME.png, 1280 px wide) and on a phone (NAME-390.png, 390 px):

    .venv/bin/python docs/screenshots/make_screenshots.py

Needs /usr/bin/chromium (apt-get install chromium) and the dev extras.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PASSWORD = "demo-password-for-screenshots"

TIMELINE = [
    ("decision", "architect", "Product images are served from object storage behind the CDN; "
     "the app never streams image bytes."),
    ("finding", "test-runner", "`test_refund_partial` fails when the refund crosses midnight "
     "UTC: the settlement date is computed in local time."),
    ("convention", "reviewer", "Every migration that adds a NOT NULL column ships a default "
     "and a backfill in the same release."),
    ("note", "operator", "Rotated the payment provider's webhook secret; old one valid until "
     "Friday 18:00 UTC."),
    ("todo", "planner", "Split `checkout/views.py` (1,400 lines) into basket, payment and "
     "confirmation modules."),
    ("finding", "profiler", "Order history: N+1 on `order.lines`; add `prefetch_related` in "
     "`OrderQuerySet.for_customer`."),
    ("decision", "architect", "Sessions move to the database backend; the cache backend lost "
     "baskets on every Redis restart."),
]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gedweb-screens-"))
    os.environ.update({
        "DJANGO_SETTINGS_MODULE": "gedweb.settings",
        "DATABASE_URL": f"sqlite:///{tmp / 'demo.sqlite3'}",
        "GEDWEB_MEMORY_ROOT": str(tmp / "mirror"),
        "GEDWEB_DEMO_PROJECT": "false",
        "GEDWEB_PRODUCTION": "false",
    })
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    from memory import services
    from memory.models import Membership
    from tests.pages.seed import seed_project

    call_command("migrate", verbosity=0)
    shop, _ = services.project_create(project_id="web-shop", name="Web shop")
    seeded = seed_project(shop)
    for category, source, content in TIMELINE:
        services.memory_entry_create(project=shop, author="agent-claude", category=category,
                                     source=source, content=content)
    # Some weeks of history, so the overview's activity charts have days to draw: an import
    # keeps each row's time (memory.services.memory_entries_import), one author a run.
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    for author, every, categories in (("ged_import:shop-checkout", 3, ("decision", "finding")),
                                      ("ged_import:ops-notes", 5, ("note", "todo"))):
        services.memory_entries_import(project=shop, author=author, rows=[
            services.ImportRow(key=f"{author}-{n}", category=categories[n % 2],
                               content=f"{categories[n % 2].title()} {n} from {author[11:]}.",
                               source="import", created_at=now - timedelta(days=days, hours=n),
                               label=str(n))
            for n, days in enumerate(range(84, 0, -every))
        ])
    for content in ("Cache the category tree for five minutes.",
                    "Sessions should move to the database backend."):
        services.candidate_create(project=shop, author="agent-codex", category="decision",
                                  content=content)
    # The chain badge reads the last check: as `manage.py memory verify` records it.
    call_command("memory", "verify", "--project", "web-shop", stdout=open(os.devnull, "w"))
    lab, _ = services.project_create(project_id="data-platform", name="Data platform")
    services.memory_entry_create(project=lab, author="agent-codex", category="decision",
                                 content="Nightly exports land in Parquet, partitioned by day.")
    user = get_user_model().objects.create_user("vera", "vera@example.org", PASSWORD)
    Membership.objects.create(user=user, project=shop, role=Membership.Role.OPERATOR)
    Membership.objects.create(user=user, project=lab)

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"

    # Playwright's sync API keeps an asyncio loop on this thread; the ORM is
    # not used from here on, and the server runs on its own thread.
    from playwright.sync_api import sync_playwright

    work = seeded.work
    pages = [
        ("project-list", "/"),
        ("overview", "/p/web-shop/"),
        ("timeline", "/p/web-shop/memory/"),
        ("search", "/p/web-shop/memory/?q=postgresql"),
        ("entry-detail", f"/p/web-shop/memory/{seeded.correction.seq}"),
        ("mirror", "/p/web-shop/mirror/"),
        ("documents", "/p/web-shop/documents/"),
        ("adr", "/p/web-shop/documents/adr/0001-orders-on-postgresql.md"),
        ("author", "/p/web-shop/memory/authors/agent-claude/"),
        ("work-item", f"/p/web-shop/work/{work.work_id}/"),
        ("revision-diff", f"/p/web-shop/work/{work.work_id}/revisions/2"),
        ("standards", "/p/web-shop/standards/"),
        ("skills", "/p/web-shop/skills/"),
        ("context-log", "/p/web-shop/context/"),
    ]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for width, height, suffix in ((1280, 860, ""), (390, 844, "-390")):
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(base + "/accounts/login/")
            page.screenshot(path=str(HERE / f"login{suffix}.png"))
            page.fill("#id_username", "vera")
            page.fill("#id_password", PASSWORD)
            with page.expect_navigation():
                page.click("button[type=submit]")
            for name, path in pages:
                page.goto(base + path)
                page.screenshot(path=str(HERE / f"{name}{suffix}.png"))
                print(f"docs/screenshots/{name}{suffix}.png  {path}")
            page.close()
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
