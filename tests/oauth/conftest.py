"""One live GedWeb for the OAuth tests, with a member, a project, and a CIMD document server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.live_server import REPO, LiveGunicorn
from tests.oauth.support import PASSWORD, DocumentServer, make_certificates

PROJECT = "oauth-shop"
OTHER = "oauth-other"


@dataclass
class OAuthSite:
    server: LiveGunicorn
    documents: DocumentServer
    project_token: str

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"

    def count(self, table: str, where: str = "1=1", params: tuple[object, ...] = ()) -> int:
        rows = self.server.sql(f"SELECT COUNT(*) FROM {table} WHERE {where}", params)
        return int(rows[0][0])


def add_member(server: LiveGunicorn, user: str, project: str, role: str) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "member", "add", user, project, "--role", role, "--create"],
        cwd=REPO, env=server.env, input=PASSWORD + "\n", capture_output=True, text=True,
        timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OAuthSite]:
    tmp = tmp_path_factory.mktemp("oauth")
    ca_file, cert_file, key_file = make_certificates(tmp)
    documents = DocumentServer(cert_file, key_file)
    with documents.running(), LiveGunicorn.running(
        tmp, GEDWEB_OAUTH_CIMD_LOOPBACK_CA=str(ca_file),
        DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
        # Every test here registers and exchanges from 127.0.0.1; the limit has
        # its own test (test_rate_limit.py).
        GEDWEB_OAUTH_RATE_LIMIT="off",
    ) as server:
        token = server.new_project(PROJECT)
        server.new_project(OTHER)
        add_member(server, "alice", PROJECT, "operator")
        add_member(server, "victor", PROJECT, "viewer")
        yield OAuthSite(server, documents, token)
