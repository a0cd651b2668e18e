"""The OAuth tests' helpers: a loopback https server for client ID metadata documents, a
login and consent over plain HTTP, and PKCE.

Client ID metadata documents must be served over https (the client_id is an
https URL). ``DocumentServer`` serves them from 127.0.0.1 with a certificate
of a CA made for the test; the server under test trusts that CA alone,
through GEDWEB_OAUTH_CIMD_LOOPBACK_CA (gedweb/oauth/cimd.py), which is off
by default and refused in production.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import ipaddress
import json
import re
import secrets
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PASSWORD = "correct-horse-battery-staple-42"


def _name(text: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, text)])


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA and a 127.0.0.1 certificate it signed: (CA file, certificate, key)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("GedWeb test CA"))
          .issuer_name(_name("GedWeb test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder().subject_name(_name("127.0.0.1"))
            .issuer_name(ca.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca_file, cert_file, key_file


class DocumentServer:
    """https://127.0.0.1:PORT/<name> answers the bytes put under <name>; anything else 404."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.documents: dict[str, tuple[bytes, str]] = {}
        self.fetched: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802  (http.server's name)
                owner.fetched.append(self.path)
                found = owner.documents.get(self.path)
                if found is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body, content_type = found
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"https://127.0.0.1:{self.port}/{name}"

    def put(self, name: str, document: dict[str, Any] | bytes,
            content_type: str = "application/json") -> str:
        body = document if isinstance(document, bytes) else json.dumps(document).encode()
        self.documents["/" + name] = (body, content_type)
        return self.url(name)

    @contextmanager
    def running(self) -> Iterator[DocumentServer]:
        self.thread.start()
        try:
            yield self
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(64)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode()
    return verifier, challenge.rstrip("=")


class Browserless:
    """A person at a GedWeb over plain HTTP: logs in, then answers consent pages by form."""

    def __init__(self, base: str, username: str, password: str = PASSWORD) -> None:
        self.base = base
        self.http = httpx2.Client(base_url=base, follow_redirects=False, timeout=30)
        page = self.http.get("/accounts/login/")
        assert page.status_code == 200, page.text
        answer = self.http.post("/accounts/login/", data={
            "username": username, "password": password, "next": "/",
            "csrfmiddlewaretoken": self.csrf(page.text)})
        assert answer.status_code == 302, answer.text

    @staticmethod
    def csrf(html: str) -> str:
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert found, html
        return found.group(1)

    def authorize(self, params: dict[str, str]) -> httpx2.Response:
        """GET the authorization endpoint: the consent page, or an error page or redirect."""
        return self.http.get("/oauth/authorize/?" + urlencode(params))

    def consent(self, params: dict[str, str], *, project: str, scope: str,
                memory_token: str = "", allow: bool = True) -> httpx2.Response:
        """Open the consent page for ``params`` and answer it; the answer (a redirect)."""
        page = self.authorize(params)
        assert page.status_code == 200, page.text
        hidden = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"',
                                 page.text))
        hidden = {k: v.replace("&amp;", "&").replace("&quot;", '"') for k, v in hidden.items()}
        form = {**hidden, "csrfmiddlewaretoken": self.csrf(page.text), "project": project,
                "memory_scope": scope, "memory_token": memory_token}
        if allow:
            form["allow"] = "on"
        return self.http.post("/oauth/authorize/", data=form)

    def code_for(self, params: dict[str, str], **choice: Any) -> str:
        answer = self.consent(params, **choice)
        assert answer.status_code == 302, answer.text
        query = parse_qs(urlsplit(answer.headers["location"]).query)
        assert "code" in query, answer.headers["location"]
        return query["code"][0]
