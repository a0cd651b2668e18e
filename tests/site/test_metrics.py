"""GET /metrics (gedweb/metrics.py, docs/operations.md#metrics): who may read it, what it says.

In process (the Django test client) the metrics live in this process, as
they do for manage.py and runserver; the last tests run a real gunicorn
with two workers, where each worker writes its own files and a scrape adds
them up (prometheus_client's multiprocess mode, set up by gunicorn.conf.py).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from memory import mirror, quotas, services
from memory.models import ProjectQuota
from tests.django_fixtures import ADMIN_TOKEN, ProjectWithToken
from tests.live_server import LiveGunicorn
from tests.site.test_settings import start

APPEND_ROUTE = "v1/projects/<project:project_id>/memory"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(**headers: str) -> Samples:
    response = Client().get("/metrics", headers=headers or ADMIN)
    assert response.status_code == 200, response.content[:300]
    return parse(response.content.decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def append(project: ProjectWithToken, content: str = "Orders stay on PostgreSQL 16.") -> None:
    response = Client().post(
        f"/v1/projects/{project.id}/memory",
        {"category": "decision", "content": content, "source": "architect"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {project.token}"},
    )
    assert response.status_code == 201, response.content


# --- who may read it -----------------------------------------------------------------------


def unknown_page() -> bytes:
    response = Client().get("/no-such-page")
    assert response.status_code == 404
    return response.content


@pytest.mark.parametrize("authorization", [
    None,
    "Bearer not-the-admin-token",
    f"Basic {ADMIN_TOKEN}",
    f"Bearer {ADMIN_TOKEN} extra",
])
def test_without_the_admin_token_metrics_answer_like_a_page_that_does_not_exist(
    db: None, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = Client().get("/metrics", headers=headers)
    assert response.status_code == 404
    assert response.content == unknown_page()
    assert b"gedweb_" not in response.content


def test_a_project_token_cannot_read_metrics(alpha: ProjectWithToken) -> None:
    response = Client().get("/metrics", headers={"Authorization": f"Bearer {alpha.token}"})
    assert (response.status_code, response.content) == (404, unknown_page())


def test_a_refused_post_is_a_404_too_not_a_405_or_a_csrf_403(db: None) -> None:
    assert Client(enforce_csrf_checks=True).post("/metrics").status_code == 404


def test_the_admin_token_reads_the_text_format(db: None) -> None:
    response = Client().get("/metrics", headers=ADMIN)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert response["Cache-Control"] == "no-store"
    assert value(parse(response.content.decode()), "gedweb_memory_state_ok") == 1


def test_the_admin_token_may_only_get(db: None) -> None:
    response = Client().post("/metrics", headers=ADMIN)
    assert (response.status_code, response["Allow"]) == (405, "GET, HEAD")


def test_without_an_admin_token_configured_no_bearer_reads_metrics(db: None, settings: Any) -> None:
    settings.ADMIN_TOKEN = None
    assert Client().get("/metrics", headers=ADMIN).status_code == 404


def test_an_allow_listed_address_reads_metrics_without_a_token(db: None, settings: Any) -> None:
    settings.METRICS_ALLOW = ["10.20.0.0/16", "2001:db8::/32"]
    for address in ("10.20.3.4", "2001:db8::7", "::ffff:10.20.9.9"):
        response = Client(REMOTE_ADDR=address).get("/metrics")
        assert response.status_code == 200, address
        assert b"gedweb_memory_state_ok 1.0" in response.content


def test_an_address_outside_the_allow_list_is_refused(db: None, settings: Any) -> None:
    settings.METRICS_ALLOW = ["10.20.0.0/16"]
    for address in ("10.21.0.1", "127.0.0.1", "2001:db8::7", "not-an-address"):
        response = Client(REMOTE_ADDR=address).get("/metrics")
        assert (response.status_code, response.content) == (404, unknown_page()), address


def test_x_forwarded_for_never_puts_a_client_on_the_allow_list(db: None, settings: Any) -> None:
    settings.METRICS_ALLOW = ["10.20.0.0/16"]
    settings.TRUSTED_PROXIES = ["192.0.2.1"]
    for peer in ("198.51.100.7", "192.0.2.1"):  # a stranger, and a trusted proxy
        client = Client(REMOTE_ADDR=peer)
        assert client.get("/metrics", headers={"X-Forwarded-For": "10.20.3.4"}).status_code == 404


def test_in_production_the_admin_token_is_taken_over_https_only(db: None, settings: Any) -> None:
    settings.PRODUCTION = True
    assert Client().get("/metrics", headers=ADMIN).status_code == 404
    assert Client().get("/metrics", headers=ADMIN, secure=True).status_code == 200


def test_in_production_the_allow_list_holds_over_plain_http(db: None, settings: Any) -> None:
    settings.PRODUCTION = True
    settings.METRICS_ALLOW = ["10.20.0.0/16"]
    assert Client(REMOTE_ADDR="10.20.3.4").get("/metrics").status_code == 200


def test_a_malformed_allow_list_stops_the_start(tmp_path: Path) -> None:
    done = start(tmp_path, GEDWEB_METRICS_ALLOW="10.0.0.0/8,example.org")
    assert done.returncode != 0
    assert "GEDWEB_METRICS_ALLOW must list IP addresses or networks, not 'example.org'" in (
        done.stderr)


def test_an_allow_list_that_includes_a_trusted_proxy_stops_the_start(tmp_path: Path) -> None:
    done = start(tmp_path, GEDWEB_METRICS_ALLOW="10.0.0.0/8",
                 GEDWEB_TRUSTED_PROXIES="10.1.2.3")
    assert done.returncode != 0
    assert "GEDWEB_METRICS_ALLOW must not include a proxy of GEDWEB_TRUSTED_PROXIES" in (
        done.stderr)


def test_a_multiprocess_directory_that_does_not_exist_stops_the_start(tmp_path: Path) -> None:
    done = start(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "missing"))
    assert done.returncode != 0
    assert "PROMETHEUS_MULTIPROC_DIR must name a directory" in done.stderr


# --- what it says --------------------------------------------------------------------------

# Appends are counted, and mirrors written, after their transaction commits:
# these tests commit for real (tests.django_fixtures.live_db).
committed = pytest.mark.usefixtures("live_db")


@committed
def test_each_api_append_counts_once_and_is_timed_under_its_route(
    alpha: ProjectWithToken,
) -> None:
    before = scrape()
    for number in range(5):
        append(alpha, f"Decision {number}.")
    after = scrape()
    appends = "gedweb_memory_appends_total"
    assert value(after, appends) - value(before, appends) == 5
    count = "gedweb_http_request_duration_seconds_count"
    labels = {"route": APPEND_ROUTE, "method": "POST", "status": "2xx"}
    assert value(after, count, **labels) - value(before, count, **labels) == 5
    assert value(after, "gedweb_http_request_duration_seconds_bucket", le="+Inf", **labels) >= 5
    assert value(after, "gedweb_http_request_duration_seconds_sum", **labels) > 0
    # The route's pattern, never the path: no label holds the project's id.
    assert not [key for key in after if any(alpha.id in text for _, text in key[1])]


@committed
def test_a_replayed_or_refused_append_does_not_count(alpha: ProjectWithToken) -> None:
    client = Client(headers={"Authorization": f"Bearer {alpha.token}",
                             "Idempotency-Key": "same-key"})
    body = {"category": "decision", "content": "Once.", "source": "architect"}
    assert client.post(f"/v1/projects/{alpha.id}/memory", body,
                       content_type="application/json").status_code == 201
    before = scrape()
    replay = client.post(f"/v1/projects/{alpha.id}/memory", body, content_type="application/json")
    assert (replay.status_code, replay["Idempotent-Replayed"]) == (201, "true")
    assert client.post(f"/v1/projects/{alpha.id}/memory", {**body, "category": "Bad Category"},
                       content_type="application/json", headers={"Idempotency-Key": "other"},
                       ).status_code == 400
    after = scrape()
    assert value(after, "gedweb_memory_appends_total") == value(
        before, "gedweb_memory_appends_total")
    refused = {"route": APPEND_ROUTE, "method": "POST", "status": "4xx"}
    assert value(after, "gedweb_http_request_duration_seconds_count", **refused) - value(
        before, "gedweb_http_request_duration_seconds_count", **refused) == 1


@committed
def test_an_import_counts_every_entry_it_appends(alpha: ProjectWithToken) -> None:
    before = scrape()
    rows = [services.ImportRow(key=f"ferryman:{n}", category="fact", content=f"Row {n}.",
                               source="ferryman", created_at=datetime(2020, 1, 1, n, tzinfo=UTC),
                               label=f"row {n}") for n in range(1, 4)]
    services.memory_entries_import(project=alpha.project, rows=rows)
    services.memory_entries_import(project=alpha.project, rows=rows)  # all present: none counts
    assert value(scrape(), "gedweb_memory_appends_total") - value(
        before, "gedweb_memory_appends_total") == 3


def test_a_request_no_route_matches_is_one_label_whatever_its_path(db: None) -> None:
    before = scrape()
    for path in ("/no-such-page", "/another/missing/page", "/static/nothing.css"):
        Client().get(path)
    labels = {"route": "(unmatched)", "method": "GET", "status": "4xx"}
    count = "gedweb_http_request_duration_seconds_count"
    assert value(scrape(), count, **labels) - value(before, count, **labels) == 3


@committed
def test_mirror_lag_shows_entries_the_mirror_lacks_until_it_catches_up(
    alpha: ProjectWithToken, settings: Any,
) -> None:
    append(alpha)
    assert value(scrape(), "gedweb_mirror_lag_entries") == 0
    settings.MIRROR_WRITER = "follower"  # the app server leaves the file to the follower
    for number in range(3):
        append(alpha, f"Later {number}.")
    lagging = scrape()
    assert value(lagging, "gedweb_mirror_lag_entries") == 3
    assert value(lagging, "gedweb_mirror_projects_behind") == 1
    mirror.sync(alpha.project)
    caught_up = scrape()
    assert value(caught_up, "gedweb_mirror_lag_entries") == 0
    assert value(caught_up, "gedweb_mirror_projects_behind") == 0


@committed
def test_the_recall_backlog_shows_what_the_indexer_has_not_reached(
    alpha: ProjectWithToken,
) -> None:
    from memory.recall import indexer, vectors

    append(alpha)
    append(alpha, "Later.")
    behind = scrape()
    assert value(behind, "gedweb_recall_backlog_entries") == 2
    assert value(behind, "gedweb_recall_lag_seconds") > 0
    while indexer.follow_once(vectors.embedder()).seen:
        pass
    caught_up = scrape()
    assert value(caught_up, "gedweb_recall_backlog_entries") == 0
    assert value(caught_up, "gedweb_recall_lag_seconds") == 0


@committed
def test_a_mirror_that_must_be_rebuilt_lags_by_the_whole_record(
    alpha: ProjectWithToken, memory_root: Path,
) -> None:
    for number in range(4):
        append(alpha, f"Entry {number}.")
    path = memory_root / alpha.id / "MEMORY.md"
    path.write_bytes(path.read_bytes()[:-10])  # a torn tail
    assert value(scrape(), "gedweb_mirror_lag_entries") == 4


@committed
def test_checkpoint_figures_show_entries_no_checkpoint_covers_yet(
    alpha: ProjectWithToken, make_project: Any,
) -> None:
    make_project("empty")  # a project without entries needs no checkpoint
    for number in range(3):
        append(alpha, f"Entry {number}.")
    uncovered = scrape()
    assert value(uncovered, "gedweb_checkpoint_uncovered_entries") == 3
    assert value(uncovered, "gedweb_checkpoint_age_seconds") > 0
    assert value(uncovered, "gedweb_projects") == 2
    services.chain_checkpoint_take(project=alpha.project)
    covered = scrape()
    assert value(covered, "gedweb_checkpoint_uncovered_entries") == 0
    assert value(covered, "gedweb_checkpoint_age_seconds") == 0
    append(alpha, "After the checkpoint.")
    assert value(scrape(), "gedweb_checkpoint_uncovered_entries") == 1


def test_quota_figures_show_the_fullest_project_per_kind(
    alpha: ProjectWithToken, beta: ProjectWithToken,
) -> None:
    # An operator's lower limit (as the admin sets it), then real charges.
    ProjectQuota.objects.filter(project=alpha.project, kind="documents").update(limit_mib=1)
    quotas.quota_charge(project=alpha.project, kind="documents",
                        size_bytes=int(0.85 * quotas.MIB))
    quotas.quota_charge(project=beta.project, kind="documents", size_bytes=1000)
    samples = scrape()
    ratio = value(samples, "gedweb_quota_use_ratio", kind="documents")
    assert ratio == pytest.approx((int(0.85 * quotas.MIB) + quotas.ROW_OVERHEAD_BYTES)
                                  / quotas.MIB)
    assert value(samples, "gedweb_quota_projects_near_limit", kind="documents") == 1
    assert value(samples, "gedweb_quota_projects_near_limit", kind="entries") == 0
    assert {labels for name, labels in samples if name == "gedweb_quota_use_ratio"} == {
        (("kind", kind),) for kind in quotas.KINDS}


# --- under gunicorn: every worker's figures in one scrape ----------------------------------


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGunicorn]:
    # Two workers, as the module doc says; the access log ends each line
    # with the answering worker's pid.
    with LiveGunicorn.running(tmp_path_factory.mktemp("metrics"), WEB_CONCURRENCY="2",
                              GUNICORN_ACCESS_LOG="-") as server:
        yield server


def live_scrape(server: LiveGunicorn) -> Samples:
    status, body, headers = server.request("GET", "/metrics", server.admin_token)
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain")
    return parse(body.decode())


def live_appends(server: LiveGunicorn) -> float:
    return value(live_scrape(server), "gedweb_memory_appends_total")


def answering_workers(server: LiveGunicorn, since: int = 0) -> set[int]:
    """The pids of the workers that acknowledged appends logged after character ``since``."""
    lines = r'"POST /v1/projects/\S+/memory HTTP/1.1" 201 .* <(\d+)>$'
    return {int(pid) for pid in re.findall(lines, server.log_text()[since:], flags=re.MULTILINE)}


def appends_over_http(server: LiveGunicorn, project: str, token: str, count: int,
                      clients: int = 4) -> None:
    """``count`` appends from concurrent clients, each request on a new connection."""
    failures: list[Any] = []

    def client(index: int) -> None:
        for number in range(index, count, clients):
            status, body, _ = server.append(project, token, {
                "category": "decision", "content": f"Entry {number}.", "source": "bench"})
            if status != 201:
                failures.append(body)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures


@pytest.mark.live_server
@pytest.mark.slow
def test_a_scrape_adds_up_the_appends_of_every_worker(gunicorn: LiveGunicorn) -> None:
    token = gunicorn.new_project("every-worker")
    since, before = len(gunicorn.log_text()), live_appends(gunicorn)
    made = 0
    # Concurrent clients spread over both workers; more rounds until both
    # have acknowledged appends (bounded).
    while len(answering_workers(gunicorn, since)) < 2 and made < 200:
        appends_over_http(gunicorn, "every-worker", token, 20)
        made += 20
    workers = answering_workers(gunicorn, since)
    assert len(workers) == 2, gunicorn.log_tail()
    samples = live_scrape(gunicorn)
    assert value(samples, "gedweb_memory_appends_total") - before == made
    files = {path.name for path in (gunicorn.tmp / "data" / "prometheus").glob("*.db")}
    assert {f"counter_{pid}.db" for pid in workers} <= files  # one file per worker
    labels = {"route": APPEND_ROUTE, "method": "POST", "status": "2xx"}
    assert value(samples, "gedweb_http_request_duration_seconds_count", **labels) >= made
    assert value(samples, "gedweb_checkpoint_uncovered_entries") >= made % 100


@pytest.mark.live_server
@pytest.mark.slow
def test_a_worker_that_dies_keeps_its_appends_in_the_total(gunicorn: LiveGunicorn) -> None:
    token = gunicorn.new_project("dying-worker")
    since, before = len(gunicorn.log_text()), live_appends(gunicorn)
    appends_over_http(gunicorn, "dying-worker", token, 20)
    booted = gunicorn.log_text().count("Booting worker with pid")
    os.kill(min(answering_workers(gunicorn, since)), signal.SIGKILL)
    deadline = time.monotonic() + 30
    while gunicorn.log_text().count("Booting worker with pid") == booted:  # its replacement
        assert time.monotonic() < deadline, gunicorn.log_tail()
        time.sleep(0.1)
    appends_over_http(gunicorn, "dying-worker", token, 6)
    assert live_appends(gunicorn) - before == 26


@pytest.mark.live_server
@pytest.mark.slow
def test_a_restart_starts_the_figures_from_nothing(gunicorn: LiveGunicorn) -> None:
    token = gunicorn.new_project("restarted")
    appends_over_http(gunicorn, "restarted", token, 8)
    gunicorn.stop()
    gunicorn.start()
    appends_over_http(gunicorn, "restarted", token, 1)
    samples = live_scrape(gunicorn)
    assert value(samples, "gedweb_memory_appends_total") == 1
    # The state of the record is read from the database, not counted.
    assert value(samples, "gedweb_checkpoint_uncovered_entries") >= 9
