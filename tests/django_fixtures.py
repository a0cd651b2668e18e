"""The Django suite's shared fixtures: API clients with tokens, projects, isolated mirror roots.

Tests run against the database named by DATABASE_URL (SQLite by default,
PostgreSQL in the second CI pass); nothing of GedWeb's own is mocked.

There is no tests/conftest.py: the tests of the pure lib and of the checkout
engine (tests/lib/, tests/checkout/) run with Django absent, so the fixtures
that boot it (the autouse memory_root and static_files_on_demand use
pytest-django's settings) are taken by each Django test directory's own
conftest.py (``from tests.django_fixtures import *``, the names in __all__).
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection
from rest_framework.test import APIClient

from memory import services
from memory.models import Project

# Tests create the projects they need; the development demo project would
# only get in the way of counts. Read at call time by the post_migrate hook.
django_settings.DEMO_PROJECT = False
# Django's default PBKDF2 hasher costs about half a second per password on
# purpose; tests hash with one iteration (tests/hashers.py), which children
# on the real settings still read. The real hashers stay listed after it.
django_settings.PASSWORD_HASHERS = [
    "tests.hashers.OneIterationPBKDF2PasswordHasher", *django_settings.PASSWORD_HASHERS
]

# The fixtures a Django test directory's conftest.py takes with `import *`.
__all__ = [
    "admin_client", "alpha", "beta", "client_for", "django_db_keepdb",
    "django_db_modify_db_settings", "django_db_setup", "live_db",
    "make_project", "memory_root", "memory_write_token", "rate_counts_forgotten",
    "recall_model", "static_files_on_demand",
]

ADMIN_TOKEN = "test-admin-token-0123456789abcdef-XYZ"
MEMORY_WRITE_TOKEN = "test-memory-write-token-0123456789abcdef"


def stored_models() -> list[type]:
    """Every model of GedWeb's data, for tests that prove a request changed nothing.

    Not memory.RateCounter: the rate limits count every authenticated
    request, whatever its answer (gedweb/throttling.py).
    """
    from django.apps import apps

    return [model for label in ("memory", "governance")
            for model in apps.get_app_config(label).get_models()
            if model._meta.label != "memory.RateCounter"]


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite serialises writers, which would hide the race",
)


@dataclass
class ProjectWithToken:
    project: Project
    token: str

    @property
    def id(self) -> str:
        return self.project.pk


# Under mutmut, the SQLite test database as migrated, before any test ran:
# each mutant's run starts from a copy of it instead of migrating anew.
_MUTMUT_TEMPLATE_SUFFIX = "-mutmut-template"
# The test databases this mutant's run copied from that template (alias -> name).
_copied_from_template: dict[str, str] = {}


def _mutant_run() -> bool:
    """A run of one mutant (mutmut's forked child), not its stats or clean runs."""
    return "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", "")


def _sqlite_aliases() -> list[str]:
    from django.db import connections

    return [alias for alias in connections if connections[alias].vendor == "sqlite"
            and not connections[alias].creation.is_in_memory_db(
                connections[alias].settings_dict["TEST"]["NAME"])]


def _sqlite_copy(source: str, target: str) -> None:
    """A consistent copy through SQLite's backup API (a WAL file's pages included)."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None,
                                 ) -> Iterator[None]:
    """Under mutmut, each mutant's test run on a test database of its own.

    mutmut (make mutants-services, tests/mutants.py) forks every mutant's run
    from one warmed-up pytest, so the process id that the settings put in the
    test database's name is the parent's, shared by the children running at
    once. pytest-django's own fixture (xdist's suffix) still runs first.

    On SQLite a mutant's database is a copy of the one its parent migrated
    (django_db_setup below keeps it): migrating anew cost each mutant about
    fifteen seconds on a busy machine, most of its run. The copy is kept by
    pytest-django (django_db_keepdb), so it is removed here after the run.
    """
    if "MUTANT_UNDER_TEST" in os.environ:
        # Once per process: each conftest that imports these fixtures has its
        # own copy of this one, and a selection spanning two such directories
        # runs both. A second suffix would name a database nobody created, and
        # forget_rate_counts() would then leave the counter file full.
        suffix = f"_m{os.getpid()}"
        for alias in _sqlite_aliases() if _mutant_run() else []:
            test = django_settings.DATABASES[alias]["TEST"]
            template = test["NAME"] + _MUTMUT_TEMPLATE_SUFFIX
            if os.path.exists(template) and not test["NAME"].endswith(suffix):
                _sqlite_copy(template, test["NAME"] + suffix)
                _copied_from_template[alias] = test["NAME"] + suffix
        for database in django_settings.DATABASES.values():
            if not database["TEST"]["NAME"].endswith(suffix):
                database["TEST"]["NAME"] += suffix
    # mutmut also runs several pytest sessions in one process (the stats, then
    # the clean run). Each creates the test database anew and removes the rate
    # counter file beside it (gedweb/db/sqlite3/base.py); this thread's open
    # connection to the removed file would count where nobody reads.
    from gedweb import throttling

    opened = getattr(throttling._thread, "counters", None)
    if opened is not None:
        opened[1].close()
        del throttling._thread.counters
    throttling._cleared_until.clear()
    yield
    from gedweb.db.sqlite3.base import _SIDE_FILE_SUFFIXES

    for name in _copied_from_template.values():
        for suffix in ("", "-wal", "-shm", "-journal", *_SIDE_FILE_SUFFIXES):
            Path(name + suffix).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def django_db_keepdb(request: pytest.FixtureRequest, django_db_modify_db_settings: None) -> bool:
    """pytest-django's, except that a mutant's copied database is used as it is."""
    return bool(_copied_from_template) or bool(request.config.getvalue("reuse_db"))


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """pytest-django's; under mutmut, the migrated SQLite database kept as the mutants' template.

    Copied right after the migrations, before any test wrote to it (a
    transactional test empties the tables it leaves).
    """
    if "MUTANT_UNDER_TEST" not in os.environ or _mutant_run():
        return
    from django.db import connections

    with django_db_blocker.unblock():
        for alias in _sqlite_aliases():
            name = connections[alias].settings_dict["NAME"]
            template = name + _MUTMUT_TEMPLATE_SUFFIX
            if not os.path.exists(template):
                connections[alias].close()
                _sqlite_copy(name, template)


@pytest.fixture(autouse=True)
def memory_root(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "bridge-memory"
    settings.MEMORY_ROOT = root
    settings.MIRROR_WRITER = "inline"
    settings.MEMORY_WRITE_TOKEN = None
    settings.ADMIN_TOKEN = ADMIN_TOKEN
    return root


@pytest.fixture(autouse=True)
def recall_model(settings: Any) -> Iterator[str]:
    """Recall embeds with the small deterministic model (gedweb.embedding.HashingEmbedder).

    Loading the real one costs every test a second and shows nothing the
    real-model tests (tests/memory/test_recall_model.py) do not. The
    process's cached matrices and lexeme statistics are forgotten:
    rolled-back projects reuse ids, and a test's ANALYZE is its own.
    """
    from memory.recall import keyword, vectors

    settings.RECALL_MODEL = "hashing"
    vectors.forget_cached()
    keyword.forget_statistics()
    yield "hashing"
    vectors.forget_cached()
    keyword.forget_statistics()


def forget_rate_counts() -> None:
    """Empty a SQLite test database's rate counter file (gedweb/throttling.py).

    The counts live beside the database, outside the transaction a test
    rolls back, so one test's requests would count against the next's.
    Only ever the test database's file: a developer's own counts stay.
    """
    from gedweb import throttling

    path = throttling.counter_file_path()
    test_name = connection.settings_dict.get("TEST", {}).get("NAME")
    if path in (None, throttling.IN_MEMORY) or connection.settings_dict["NAME"] != test_name:
        return
    if os.path.exists(path):
        with closing(sqlite3.connect(path, timeout=30)) as counters, counters:
            counters.execute(f"DELETE FROM {throttling.COUNTER_TABLE}")


@pytest.fixture(autouse=True)
def rate_counts_forgotten() -> Iterator[None]:
    yield
    forget_rate_counts()


@pytest.fixture
def memory_write_token(settings: Any) -> str:
    settings.MEMORY_WRITE_TOKEN = MEMORY_WRITE_TOKEN
    return MEMORY_WRITE_TOKEN


@pytest.fixture
def make_project(db: None) -> Callable[..., ProjectWithToken]:
    def make(project_id: str = "alpha", name: str | None = None, **kwargs: Any) -> ProjectWithToken:
        project, raw = services.project_create(
            project_id=project_id, name=name or project_id.title(), **kwargs
        )
        return ProjectWithToken(project, raw)

    return make


@pytest.fixture
def alpha(make_project: Callable[..., ProjectWithToken]) -> ProjectWithToken:
    return make_project("alpha")


@pytest.fixture
def beta(make_project: Callable[..., ProjectWithToken]) -> ProjectWithToken:
    return make_project("beta")


def bearer_client(token: str | None = None, **headers: str) -> APIClient:
    client = APIClient()
    credentials = dict(headers)
    if token is not None:
        credentials["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    client.credentials(**credentials)
    return client


@pytest.fixture
def client_for() -> Callable[..., APIClient]:
    """client_for(token, HTTP_X_MEMORY_TOKEN=...) -> an APIClient sending those headers."""
    return bearer_client


@pytest.fixture
def admin_client() -> APIClient:
    return bearer_client(ADMIN_TOKEN)


def purge_append_only_tables() -> None:
    """Empty entry tables between transactional tests (test-only).

    Django's flush deletes rows, which the append-only triggers refuse on
    SQLite; PostgreSQL's flush uses TRUNCATE, which row triggers do not see.
    Application code never does this.
    """
    if is_postgres():
        return
    from gedweb import append_only

    # Every append-only table from the one registry (gedweb.append_only.TABLES),
    # which lists a table after those it references: deleted in reverse.
    # Memory entries have triggers and a full-text table of their own.
    tables = [table for table in append_only.TABLES if table != append_only.ENTRIES]
    entries = importlib.import_module("memory.migrations.0002_append_only_and_search")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM governance_activework")
        cursor.execute("DELETE FROM memory_memorycandidate")
        # Recall's derived rows reference entries.
        cursor.execute("DELETE FROM memory_entryvector")
        cursor.execute("DELETE FROM memory_documentvector")
        cursor.execute("DELETE FROM memory_recallprogress")
        cursor.execute("DELETE FROM memory_recallcursor")
        for table in tables:
            for statement in append_only.sqlite_backward(table):
                cursor.execute(statement)
        for table in reversed(tables):
            cursor.execute(f"DELETE FROM {table}")
        for table in tables:
            for statement in append_only.expected_triggers("sqlite", table).values():
                cursor.execute(statement)
        redaction = importlib.import_module("memory.migrations.0014_redaction")
        for statement in redaction.SQLITE_BACKWARD + entries.SQLITE_BACKWARD:
            cursor.execute(statement)
        cursor.execute(f"DELETE FROM {append_only.ENTRIES}")
        for statement in entries.SQLITE_FORWARD:
            cursor.execute(statement)
        # 0002 recreated its own full-text table; 0007 replaces it (empty now),
        # and 0014 puts back the triggers that let a redaction through.
        # 0023 gave the UPDATE rule the entries' MAC columns.
        for statement in importlib.import_module(
            "memory.migrations.0007_fts_project_column"
        ).SQLITE_FORWARD + redaction.SQLITE_FORWARD + importlib.import_module(
            "memory.migrations.0023_memoryentry_mac"
        ).SQLITE_FORWARD:
            cursor.execute(statement)


@pytest.fixture
def live_db(transactional_db: None) -> Iterator[None]:
    """Committed data visible to other threads' connections, cleaned up after."""
    yield
    purge_append_only_tables()


def run_in_threads(work: Callable[[int], Any], count: int) -> list[Any]:
    """Run work(i) for i in range(count) on real threads released together.

    Returns each call's result or the exception it raised, in index order.
    Every thread closes its own database connection, as a request would.
    """
    import threading

    from django.db import connections

    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[index] = work(index)
        except BaseException as exc:  # collected for the test to assert on
            results[index] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


@pytest.fixture(autouse=True)
def static_files_on_demand(settings: Any) -> None:
    """Look static files up per request instead of scanning every finder per client.

    pytest-django forces DEBUG off, which turns WhiteNoise's autorefresh off,
    so each new test client's middleware would walk every static file of
    every app (Swagger UI included) before its first request.
    """
    settings.WHITENOISE_AUTOREFRESH = True
