"""The product as a person meets it: `make run` with the README's defaults, from outside.

Several gunicorn workers, no DJANGO_SECRET_KEY, a fresh data directory
(tests/acceptance/conftest.py). People log in with Debian's chromium on both
login pages and keep browsing; an operator decides on a candidate where they
read it; a view-only staff user's forged POSTs change nothing; checkpoints
are taken and verify in another process; the data directory is private.
Every fact is read back through the API, the pages or `manage.py`.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from itertools import cycle, islice
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.acceptance.conftest import PASSWORD, MadeRun
from tests.browser import chromium, require_browser

# `make run` migrates, collects static files and boots its workers in the
# first test's setup: up to 180 s each for the server and its workers.
pytestmark = [pytest.mark.live_server, pytest.mark.slow, pytest.mark.timeout(600)]

require_browser()

DEMO_TOKEN = "demo-local-token"  # development's demo project (README)
TEAM_PAGES = ["/", "/p/demo/", "/p/demo/memory/", "/p/demo/mirror/", "/p/demo/documents/",
              "/p/demo/work/", "/p/demo/standards/", "/p/demo/skills/", "/p/demo/context/",
              "/p/demo/memory/?q=acceptance"]
ADMIN_PAGES = ["/admin/", "/admin/memory/project/", "/admin/memory/memoryentry/",
               "/admin/memory/memorycandidate/", "/admin/memory/projecttoken/",
               "/admin/memory/membership/", "/admin/governance/standardsimport/",
               "/admin/governance/workitem/", "/admin/memory/project/demo/change/"]
STAFF = """
from django.contrib.auth.models import Permission, User
def staff(name, codenames):
    user = User.objects.create_user(name, name + "@example.org", {password!r}, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
staff("olga", ["view_project", "view_memoryentry", "view_memorycandidate",
               "change_memorycandidate", "add_memoryentry"])
staff("vic", ["view_project", "view_memoryentry", "view_memorycandidate", "view_projecttoken",
              "view_membership", "view_standardsimport"])
""".format(password=PASSWORD)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as instance:
        yield instance


@pytest.fixture(scope="module")
def people(made_run: MadeRun) -> MadeRun:
    """A viewer (made with `member add --create`), a superuser, an operator and a view-only
    staff user; the two staff users are operator members of demo, so only their
    permissions tell them apart."""
    done = made_run.manage("member", "add", "vera", "demo", "--role", "viewer", "--create",
                           stdin=PASSWORD + "\n")
    assert done.returncode == 0, done.stderr
    done = made_run.manage("createsuperuser", "--noinput", "--username", "root",
                           "--email", "root@example.org", DJANGO_SUPERUSER_PASSWORD=PASSWORD)
    assert done.returncode == 0, done.stderr
    made_run.shell(STAFF)
    for name in ("olga", "vic"):
        done = made_run.manage("member", "add", name, "demo", "--role", "operator")
        assert done.returncode == 0, done.stderr
    return made_run


def log_in(browser: Any, server: MadeRun, login_path: str, username: str) -> Any:
    """A browser context logged in through the form at ``login_path``."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(server.base + login_path)
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("form [type=submit]")
    assert "/login/" not in page.url, page.content()[:2000]
    return context


def csrf_token(page: Any) -> str:
    return page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")


def entries(server: MadeRun) -> list[dict[str, Any]]:
    status, body, _ = server.request("GET", "/v1/projects/demo/memory?limit=500", DEMO_TOKEN)
    assert status == 200, body
    return body["items"]


def candidate(server: MadeRun, content: str) -> dict[str, Any]:
    status, body, _ = server.request(
        "POST", "/v1/projects/demo/memory/candidates", DEMO_TOKEN,
        {"category": "decision", "content": content, "source": "agent"})
    assert status == 201, body
    return body


def candidate_status(server: MadeRun, uuid: str) -> str:
    status, body, _ = server.request("GET", "/v1/projects/demo/memory/candidates?limit=500",
                                     DEMO_TOKEN)
    assert status == 200, body
    (found,) = [item for item in body["items"] if item["id"] == uuid]
    return found["status"]


def admin_pk(page: Any, server: MadeRun, content: str) -> str:
    """The candidate's admin id, found the way an operator finds it: searching the list."""
    page.goto(server.base + "/admin/memory/memorycandidate/?" + urlencode({"q": content}))
    link = page.locator("#result_list tbody tr a").first
    match = re.search(r"/memorycandidate/(\d+)/change/", link.get_attribute("href"))
    assert match, page.content()[:2000]
    return match.group(1)


# --- one secret per installation --------------------------------------------------------


def test_it_runs_several_workers_without_a_secret_key(made_run: MadeRun) -> None:
    assert "DJANGO_SECRET_KEY" not in made_run.env
    assert made_run.configured_workers() >= 3
    assert len(made_run.worker_pids()) == made_run.configured_workers()


def test_it_prints_where_things_are_and_names_no_secret(made_run: MadeRun) -> None:
    """Issue 36 §1: the start banner, as a newcomer meets it."""
    log = made_run.log_text()
    base = made_run.base
    for line in (f"GedWeb is ready at {base}/", f"  admin       {base}/admin/",
                 f"  API docs    {base}/v1/docs", f"  MCP         {base}/mcp",
                 f"  health      {base}/healthz",
                 "  demo        project 'demo', token 'demo-local-token'",
                 "  admin token set (GEDWEB_ADMIN_TOKEN)",
                 f"  data        {made_run.data_dir}",
                 "  debug       off (DJANGO_DEBUG=true turns it on)"):
        assert line in log
    assert made_run.admin_token not in log


@pytest.mark.parametrize(("path", "status"), [
    # 1,000 four-byte characters, percent-encoded: longer than any line gunicorn reads.
    ("/v1/projects/demo/memory?q=" + "%F0%9F%98%80" * 1000, 414),
    ("/v1/projects/%0a", 404),
])
def test_what_the_server_refuses_under_v1_is_the_json_error_shape(made_run: MadeRun, path: str,
                                                                   status: int) -> None:
    """Issue 36 §2: gunicorn's own 414 and a path no route matches, as JSON."""
    answer, body, headers = made_run.request("GET", path, DEMO_TOKEN)
    assert answer == status
    assert headers["content-type"] == "application/json"
    assert set(body) == {"code", "message"}
    assert body["code"] == ("bad_request" if status == 414 else "not_found")


def test_one_login_holds_on_every_worker_over_plain_http(people: MadeRun) -> None:
    """The issue's check: 12 navigations after one login, each on a new connection."""
    status, page, headers = people.request("GET", "/accounts/login/", headers={"Accept": "*/*"})
    assert status == 200
    csrf = re.search(r"csrftoken=([^;]+)", headers["set-cookie"]).group(1)
    form = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    body = urlencode({"username": "vera", "password": PASSWORD, "csrfmiddlewaretoken": form})
    conn_status, _, login_headers = _post_form(people, "/accounts/login/", body,
                                               {"csrftoken": csrf})
    assert conn_status == 302 and login_headers["location"] == "/"
    session = re.search(r"sessionid=([^;]+)", login_headers["set-cookie"]).group(1)
    since = people.log_size()
    answers = [people.request("GET", path, headers={"Accept": "text/html"},
                              cookies={"sessionid": session})[0]
               for path in islice(cycle(TEAM_PAGES), 12)]
    assert answers == [200] * 12
    assert len(people.answering_workers(since)) >= 2  # the session held on each of them


def _post_form(server: MadeRun, path: str, body: str,
               cookies: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request("POST", path, body=body, headers={
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})
        response = conn.getresponse()
        payload = response.read()
        return response.status, payload, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


@pytest.mark.parametrize(("login_path", "username", "pages"), [
    ("/accounts/login/", "vera", TEAM_PAGES),
    ("/admin/login/", "root", ADMIN_PAGES),
], ids=["team-pages", "admin"])
@pytest.mark.browser
def test_a_browser_login_stays_logged_in_for_20_navigations(
    browser: Any, people: MadeRun, login_path: str, username: str, pages: list[str]
) -> None:
    context = log_in(browser, people, login_path, username)
    state = context.storage_state()
    context.close()
    since = people.log_size()
    seen = []
    for path in islice(cycle(pages), 20):
        # A new context per navigation has its own connections, so the
        # navigations land on whichever worker accepts them.
        visit = browser.new_context(storage_state=state)
        page = visit.new_page()
        response = page.goto(people.base + path)
        seen.append((path, response.status, "/login/" in page.url))
        visit.close()
    assert seen == [(path, 200, False) for path in islice(cycle(pages), 20)]
    assert len(people.answering_workers(since)) >= 2


# --- operators decide where they read ---------------------------------------------------


@pytest.mark.browser
def test_an_operator_approves_a_candidate_on_its_detail_page(browser: Any,
                                                             people: MadeRun) -> None:
    proposed = candidate(people, "Acceptance: orders stay on PostgreSQL 16.")
    before = len(entries(people))
    context = log_in(browser, people, "/admin/login/", "olga")
    page = context.new_page()
    pk = admin_pk(page, people, proposed["content"])
    page.goto(f"{people.base}/admin/memory/memorycandidate/{pk}/change/")
    assert page.locator("#candidate-content").inner_text() == proposed["content"]
    with page.expect_navigation():
        page.click("input[name=approve]")
    assert "approved" in page.locator(".messagelist").inner_text().lower()
    context.close()
    after = entries(people)
    assert len(after) == before + 1
    assert (after[-1]["content"], after[-1]["author"]) == (proposed["content"], "user:olga")
    assert candidate_status(people, proposed["id"]) == "approved"


@pytest.mark.browser
def test_a_view_only_staff_users_posts_change_nothing(browser: Any, people: MadeRun) -> None:
    proposed = candidate(people, "Acceptance: a viewer must not approve this.")
    before = entries(people)
    context = log_in(browser, people, "/admin/login/", "vic")
    page = context.new_page()
    pk = admin_pk(page, people, proposed["content"])
    page.goto(f"{people.base}/admin/memory/memorycandidate/{pk}/change/")
    assert page.locator("input[name=approve]").count() == 0  # no button to press
    token = csrf_token(page)
    headers = {"Referer": page.url}
    candidates = f"{people.base}/admin/memory/memorycandidate/"
    tokens = f"{people.base}/admin/memory/projecttoken/"
    page.goto(tokens)
    token_pks = [re.search(r"/projecttoken/(\d+)/", a.get_attribute("href")).group(1)
                 for a in page.locator("#result_list tbody tr a").all()]
    assert token_pks
    forged = [
        (f"{candidates}{pk}/approve/", {}),
        (f"{candidates}{pk}/reject/", {}),
        (candidates, {"action": "approve_candidates", "_selected_action": pk}),
        (candidates, {"action": "reject_candidates", "_selected_action": pk}),
        *((tokens, {"action": "revoke_tokens", "_selected_action": pk}) for pk in token_pks),
    ]
    for url, form in forged:
        response = context.request.post(url, form={"csrfmiddlewaretoken": token, **form},
                                        headers=headers, max_redirects=0)
        # Refused (403), or the list again without running an action it may not
        # use; what matters is the state read back below.
        assert response.status in (200, 302, 403), (url, response.status)
        assert not re.search(r"(Approved|Rejected|Revoked) \d", response.text()), url
    context.close()
    assert candidate_status(people, proposed["id"]) == "pending"
    assert entries(people) == before
    assert people.request("GET", "/v1/projects/demo", DEMO_TOKEN)[0] == 200  # not revoked


# --- checkpoints and the key, across processes ------------------------------------------


def test_appends_over_http_take_a_checkpoint_that_manage_py_verifies(people: MadeRun) -> None:
    have = len(entries(people))
    since = people.log_size()
    for n in range(have, 100):
        status, body, _ = people.request(
            "POST", "/v1/projects/demo/memory", DEMO_TOKEN,
            {"category": "note", "content": f"acceptance entry {n}", "source": "agent"})
        assert status == 201, body
    assert len(people.answering_workers(since)) >= 2
    status, report, _ = people.request("GET", "/v1/projects/demo/memory/verify", DEMO_TOKEN)
    assert status == 200 and report["ok"] is True, report
    assert report["checkpoint"]["seq"] == 100 and report["checkpoint"]["key_id"]
    # Another process, with the installation's key from the data directory.
    done = people.manage("memory", "verify", "--project", "demo")
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"problems": []' in done.stdout and '"seq": 100' in done.stdout
    line = (people.data_dir / "bridge-memory" / "demo" / "CHECKPOINTS").read_text().splitlines()
    assert line[0].split(" ")[:2] == ["v2", "100"]
    assert line[0].split(" ")[4] == report["checkpoint"]["key_id"]


def test_the_data_directory_and_its_files_are_private(people: MadeRun) -> None:
    data = people.data_dir
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE((data / "secret_key").stat().st_mode) == 0o600
    databases = [p for p in data.iterdir() if p.name.startswith("gedweb.sqlite3")]
    if people.pg_name is None:
        assert {p.name for p in databases} >= {"gedweb.sqlite3", "gedweb.sqlite3-wal"}
    for path in databases:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


# --- password guessing ------------------------------------------------------------------


def test_guessing_is_throttled_across_workers_and_an_operator_can_lift_it(
    people: MadeRun,
) -> None:
    def attempt(password: str) -> tuple[int, bytes, dict[str, str]]:
        status, page, headers = people.request("GET", "/admin/login/",
                                               headers={"Accept": "text/html"})
        assert status == 200
        csrf = re.search(r"csrftoken=([^;]+)", headers["set-cookie"]).group(1)
        form = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        body = urlencode({"username": "root", "password": password, "next": "/admin/",
                          "csrfmiddlewaretoken": form.decode()})
        return _post_form(people, "/admin/login/", body, {"csrftoken": csrf})

    since = people.log_size()
    statuses = [attempt(f"wrong-{n}")[0] for n in range(5)]
    assert statuses == [200, 200, 200, 200, 429]  # the fifth failure locks
    status, page, headers = attempt(PASSWORD)  # the right password, too late
    assert status == 429 and "sessionid" not in headers.get("set-cookie", "")
    assert b"Try again in 15 minutes" in page
    assert len(people.answering_workers(since)) >= 2  # counted across workers
    log = people.log_text()
    assert 'AXES: New login failure by {username: "root"' in log
    assert "wrong-0" not in log and PASSWORD not in log
    # The operator's way out, beside the server.
    done = people.manage("axes_reset")
    assert done.returncode == 0, done.stderr
    status, _, headers = attempt(PASSWORD)
    assert status == 302 and "sessionid=" in headers["set-cookie"]
