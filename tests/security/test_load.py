"""Bounded mixed load against the real server (catalogue T55, shortened for CI).

Not the 10-minute staging run: about 12 seconds of client threads against
gunicorn (gunicorn.conf.py, two gthread workers) on a database of its own,
doing roughly 79 % reads, 15 % appends across several projects, 5 %
governance revisions and 1 % retries of an acknowledged Idempotency-Key,
while `manage.py memory mirror --rebuild` runs over and over beside them.

Afterwards, with SQL on the server's database:
- nothing lost: every acknowledged append is stored exactly once, and the
  stored rows are exactly the acknowledged ones (2xx appends == rows);
- seqs gap-free and the chain verifies per project;
- governance revisions contiguous, each writer saw them strictly increase;
- zero 5xx and no dropped connection;
- the mirrors converge (`memory mirror --check`) once the load stops.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from tests.governance.support import DIRECT, evidence
from tests.live_server import REPO, LiveGunicorn, ServerDown

pytestmark = [pytest.mark.live_server, pytest.mark.slow]

DURATION = 10.0
CLIENTS = 8
PROJECTS = 6
CONVERGE_WITHIN = 15.0


@pytest.fixture
def live(tmp_path) -> Iterator[LiveGunicorn]:
    with LiveGunicorn.running(tmp_path) as server:
        yield server


class Load:
    def __init__(self, live: LiveGunicorn, projects: dict[str, str], works: dict[str, str],
                 deadline: float) -> None:
        self.live, self.projects, self.works, self.deadline = live, projects, works, deadline
        self.lock = threading.Lock()
        self.acked: dict[str, dict[str, tuple[int, str]]] = defaultdict(dict)  # project -> id
        self.keyed: list[tuple[str, str, dict[str, Any], str]] = []  # project, key, body, id
        self.revisions: dict[tuple[int, str], list[int]] = defaultdict(list)
        self.statuses: Counter[str] = Counter()
        self.failures: list[Any] = []
        self.latencies: list[float] = []

    def send(self, label: str, method: str, path: str, token: str, body: Any = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]] | None:
        started = time.monotonic()
        try:
            status, payload, response_headers = self.live.request(method, path, token, body,
                                                                  headers)
        except ServerDown as exc:
            self.failures.append((label, path, repr(exc)))
            return None
        with self.lock:
            self.latencies.append(time.monotonic() - started)
            self.statuses[f"{label} {status}"] += 1
        if status >= 500:
            self.failures.append((label, path, status, payload))
            return None
        return status, payload, response_headers

    def client(self, index: int) -> None:
        rng = random.Random(index)
        n = 0
        while time.monotonic() < self.deadline and len(self.failures) < 5:
            n += 1
            project = rng.choice(list(self.projects))
            token = self.projects[project]
            roll = rng.random()
            if roll < 0.15:
                self.append(index, n, project, token, keyed=rng.random() < 0.5)
            elif roll < 0.20:
                self.revise(index, rng)
            elif roll < 0.21:
                self.retry(rng)
            else:
                self.read(project, token, rng)

    def append(self, index: int, n: int, project: str, token: str, keyed: bool) -> None:
        body = {"category": "load", "content": f"client {index} append {n} {uuid.uuid4()}"}
        headers = {"X-Memory-Token": self.live.memory_token}
        key = f"load-{index}-{n}" if keyed else None
        if key:
            headers["Idempotency-Key"] = key
        sent = self.send("append", "POST", f"/v1/projects/{project}/memory", token, body, headers)
        if sent is None:
            return
        status, payload, _ = sent
        if status != 201:
            self.failures.append(("append", status, payload))
            return
        with self.lock:
            self.acked[project][payload["id"]] = (payload["seq"], payload["hash"])
            if key:
                self.keyed.append((project, key, body, payload["id"]))

    def retry(self, rng: random.Random) -> None:
        with self.lock:
            if not self.keyed:
                return
            project, key, body, entry_id = rng.choice(self.keyed)
        headers = {"X-Memory-Token": self.live.memory_token, "Idempotency-Key": key}
        sent = self.send("retry", "POST", f"/v1/projects/{project}/memory",
                         self.projects[project], body, headers)
        if sent is None:
            return
        status, payload, response_headers = sent
        if (status, payload.get("id"), response_headers.get("idempotent-replayed")) != (
                201, entry_id, "true"):
            self.failures.append(("retry", key, status, payload))

    def revise(self, index: int, rng: random.Random) -> None:
        project = rng.choice(list(self.works))
        token, work_id = self.projects[project], self.works[project]
        base = f"/v1/projects/{project}/work/{work_id}/governance"
        sent = self.send("governance-read", "GET", base, token)
        if sent is None:
            return
        revision = sent[1]["revision"]
        sent = self.send("revision", "POST", f"{base}/evidence", token, {
            "expected_revision": revision, "evidence": evidence("inspection", "observed")})
        if sent is None:
            return
        status, payload, _ = sent
        if status == 200:
            with self.lock:
                self.revisions[(index, project)].append(payload["revision"])
        elif (status, payload.get("code")) != (409, "stale_revision"):
            self.failures.append(("revision", status, payload))

    def read(self, project: str, token: str, rng: random.Random) -> None:
        choice = rng.random()
        if choice < 0.5:
            path = f"/v1/projects/{project}/memory?order=desc&limit=20"
        elif choice < 0.7:
            path = f"/v1/projects/{project}/memory?q=client&limit=10"
        elif choice < 0.85 and project in self.works:
            path = f"/v1/projects/{project}/work/{self.works[project]}/governance"
        else:
            path = f"/v1/projects/{project}/memory/1"
        sent = self.send("read", "GET", path, token)
        if sent is not None and sent[0] not in (200, 404):
            self.failures.append(("read", path, sent[0], sent[1]))


def rebuild_mirrors_until(live: LiveGunicorn, stop: threading.Event, runs: list[int]) -> None:
    while not stop.is_set():
        done = subprocess.run([sys.executable, "manage.py", "memory", "mirror", "--rebuild"],
                              cwd=REPO, env=live.env, capture_output=True, text=True,
                              timeout=120, check=False)
        runs.append(done.returncode)


def test_mixed_load_with_parallel_mirror_rebuilds_loses_nothing_and_never_fails(live):
    projects = {f"load-{i}": live.new_project(f"load-{i}") for i in range(PROJECTS)}
    works = {}
    for project in list(projects)[:2]:
        status, body, _ = live.request("POST", f"/v1/projects/{project}/work",
                                       projects[project], DIRECT)
        assert status == 201, body
        works[project] = body["work_id"]

    load = Load(live, projects, works, time.monotonic() + DURATION)
    stop, rebuilds = threading.Event(), []
    rebuilder = threading.Thread(target=rebuild_mirrors_until, args=(live, stop, rebuilds))
    rebuilder.start()
    clients = [threading.Thread(target=load.client, args=(i,)) for i in range(CLIENTS)]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(timeout=DURATION + 60)
    stop.set()
    rebuilder.join(timeout=120)

    assert load.failures == [], (load.failures[:5], live.log_tail())
    assert rebuilds and set(rebuilds) == {0}, rebuilds
    appended = sum(len(ids) for ids in load.acked.values())
    assert appended > 0 and sum(len(r) for r in load.revisions.values()) > 0, load.statuses

    for project, token in projects.items():
        stored = {
            str(uuid.UUID(str(entry_uuid))): (seq, digest)
            for entry_uuid, seq, digest in live.sql(
                "SELECT uuid, seq, hash FROM memory_memoryentry WHERE project_id = %s",
                (project,))
        }
        assert stored == load.acked[project], project  # 2xx appends == rows, same seq/hash
        seqs = sorted(seq for seq, _ in stored.values())
        assert seqs == list(range(1, len(seqs) + 1)), project
        report = live.verify(project, token)
        assert (report["ok"], report["entries"]) == (True, len(seqs)), project

    for project, work_id in works.items():
        accepted = sorted(rev for (_, p), revs in load.revisions.items() if p == project
                          for rev in revs)
        assert accepted == list(range(1, len(accepted) + 1)), project
        (stats,) = live.sql(
            "SELECT COUNT(*), COUNT(DISTINCT r.revision), MIN(r.revision), MAX(r.revision)"
            " FROM governance_governancerevision r JOIN governance_workitem w"
            " ON w.id = r.work_id WHERE w.work_id = %s", (work_id,))
        assert tuple(stats) == (len(accepted) + 1, len(accepted) + 1, 0, len(accepted))
    for (_, _), revs in load.revisions.items():
        assert revs == sorted(set(revs))  # strictly increasing for each writer

    # The rebuilds and the inline writer share the file lock; once the load
    # stops every mirror must equal a rebuild from the record.
    deadline = time.monotonic() + CONVERGE_WITHIN
    while True:
        check = live.manage("memory", "mirror", "--check")
        if check.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert check.returncode == 0, check.stderr

    latencies = sorted(load.latencies)
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    print(f"mixed load: {len(latencies)} requests in {DURATION:.0f} s, {appended} appends, "
          f"{len(rebuilds)} parallel rebuilds, p99 {p99 * 1000:.0f} ms; {dict(load.statuses)}")
