"""Screenshots of the review, compare and context bundle pages at 1280 and 390 px.

Like make_screenshots.py (whose seeding it shares: tests/pages/seed.py), on
a throwaway SQLite database served on 127.0.0.1, with Debian's chromium:

    .venv/bin/python docs/screenshots/make_review_screenshots.py

Writes <page>-1280.png and <page>-390.png next to this file.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PASSWORD = "demo-password-for-screenshots"
WIDTHS = {1280: 860, 390: 844}  # width: height

PROPOSALS = [
    ("agent-codex", "idea", "planner", "Cache the **formatted price** per currency: the "
     "catalogue page spends 70% of its time rendering prices."),
    ("agent-claude", "convention", "reviewer", "Every new view gets a query-count test "
     "(`assertNumQueries`) before it is merged."),
    ("agent-codex", "finding", "test-runner", "`test_coupon_stacking` passes 200 runs in a "
     "row since the basket row lock landed."),
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

    from governance.models import ContextDelivery
    from memory import services
    from memory.models import Membership
    from tests.pages.seed import seed_project

    call_command("migrate", verbosity=0)
    shop, _ = services.project_create(project_id="web-shop", name="Web shop")
    seed_project(shop)
    made = [services.candidate_create(project=shop, author=author, category=category,
                                      source=source, content=content)
            for author, category, source, content in PROPOSALS]
    services.candidate_approve(project=shop, candidate=made[2], by="user:olga")
    services.candidate_create(project=shop, author="agent-claude", category="note",
                              content="Staging was restored from Monday's backup.")
    rejected = services.candidate_create(project=shop, author="agent-claude", category="note",
                                         content="Turn the CDN cache off during the sale.")
    services.candidate_reject(project=shop, candidate=rejected, by="user:olga")
    user = get_user_model().objects.create_user("vera", "vera@example.org", PASSWORD)
    Membership.objects.create(user=user, project=shop, role=Membership.Role.OPERATOR)
    delivery = ContextDelivery.objects.filter(project=shop, work__isnull=False).first()
    assert delivery is not None

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"

    from playwright.sync_api import sync_playwright

    pages = [
        ("review", "/p/web-shop/review/"),
        ("compare", "/p/web-shop/compare/adr/0001-orders-on-postgresql.md?from=1&to=2"),
        ("context-bundle", f"/p/web-shop/context/{delivery.pk}"),
    ]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for width, height in WIDTHS.items():
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(base + "/accounts/login/")
            page.fill("#id_username", "vera")
            page.fill("#id_password", PASSWORD)
            with page.expect_navigation():
                page.click("button[type=submit]")
            for name, path in pages:
                page.goto(base + path)
                out = HERE / f"{name}-{width}.png"
                page.screenshot(path=str(out))
                wide = page.evaluate("() => document.documentElement.scrollWidth")
                print(f"docs/screenshots/{out.name}  {path}  (document {wide} px wide)")
            page.close()
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
