"""The secret scanner's two corpora (issue 22): what memory is full of, and fake credentials.

REALISTIC: entries as agents write them (decisions, ADRs, handoffs, reports,
in the style of docs/ and the GedPi reference), full of commit SHAs, SHA-256
digests, UUIDs, GedWeb chain hashes, base64 fixtures in code blocks and URLs
without credentials; plus every page of docs/ and of the shared reference.
None may be reported.

FAKES: one made-up credential of every supported format (none is live: each
was typed for this file), as (kind, secret); ``embeddings`` puts each alone,
in prose and in code. Every one must be reported, with its kind, at its
position.

Used by tests/security/test_secret_scan.py and bench/secret_scan.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SHARED = Path("/work/shared")


def _b64url(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


SHA1 = "3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c6d7e8f90"
SHA1_B = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"
SHA256 = hashlib.sha256(b"GedWeb fixture").hexdigest()
CHAIN = hashlib.sha256(b"0" * 64 + b"\n{}").hexdigest()
UUID = str(uuid.UUID("0f8e2c3a-1b2c-4d5e-8f90-a1b2c3d4e5f6"))
FIXTURE_B64 = base64.b64encode(bytes(range(256))).decode()
PNG_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(48)).decode()

REALISTIC: list[str] = [
    f"Decision: keep the hash chain per project. Commit {SHA1} moved the head read to "
    f"the (project, seq) index; the entry's hash is {CHAIN}.",
    f"ADR 0007: the ledger links content by digest (sha256 {SHA256}), not bytes, so a "
    "later redaction can drop the bytes and keep the link.\n\nStatus: accepted.",
    f"Handoff for billing-exports-20260101120000000-{'ab' * 16}:\n\n- done: SPEC.md v3, "
    f"TASKS.md v2 (plan fingerprint {SHA256[:32]})\n- next: T4, see "
    "https://gitlab.example.org/team/app/-/merge_requests/412\n- blocked: none",
    f"Report: the suite ran on PostgreSQL 16 at {SHA1_B}; 1,204 passed, 3 skipped.\n"
    "```text\nplatform linux -- Python 3.12.1, pytest-8.3.2\n```",
    "The fixture for the mirror test is base64 in a code block:\n\n```python\n"
    f"FIXTURE = \"{FIXTURE_B64}\"\nPNG = \"{PNG_B64}\"\n```\n",
    f"Entry {UUID} corrects seq 41: the checkpoint at seq 1000 is "
    f"v2 1000 {CHAIN} 2026-11-02T10:00:00.000000Z k1 {SHA256}.",
    "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/test for the PostgreSQL runs; "
    "the server listens on http://127.0.0.1:8000/v1/ and https://gedweb.example.org:8443/v1/.",
    "ssh://git@github.com:22/example/gedweb.git and git+https://github.com/example/"
    "tool.git@v1.4.2 pin the tool; pip install 'detect-secrets>=1.5,<2'.",
    "Token handling: the bearer token is sent as `Authorization: Bearer $GEDWEB_TOKEN`; "
    "password: must be at least 12 characters; token: the project's (gwp_...).",
    "```bash\ncurl -s -H \"Authorization: Bearer $TOKEN\" "
    "'https://gedweb.example.org/v1/projects/p/memory?order=desc&limit=20'\n```",
    f"Evidence: tests passed at {SHA1}; tree {SHA1_B}; snapshot digest sha256:{SHA256}; "
    f"request id {uuid.uuid4().hex}; run 8f3e1a2b-9c4d-4e5f-a6b7-c8d9e0f1a2b3.",
    "The JWT header we expect is `{\"alg\": \"RS256\"}`; base64url of it starts with eyJ, "
    "so the docs say eyJhbGciOi... and never a whole token.",
    "AKIA is the prefix of AWS access key ids; ghp_ of GitHub tokens, xoxb- of Slack's: "
    "the scanner looks for the whole format, not the prefix alone.",
    f"Migration 0013 adds memory_allowedsecret. Checksum of the dump: {SHA256}. "
    f"Backup taken at 2026-12-03T06:45:00Z, object key backups/{UUID}.sql.gz.",
    "Rust: `let digest = Sha256::digest(b\"abc\"); assert_eq!(hex::encode(digest), "
    "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\");`",
    "See https://docs.python.org/3/library/re.html#re.Pattern.finditer and "
    "https://user@example.org/path (a user, no password) and mailto:ops@example.org.",
]


def realistic_pages() -> dict[str, str]:
    """Every page of docs/ and of the shared reference: GedWeb's and GedPi's own prose."""
    pages = {str(p.relative_to(ROOT)): p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
    for path in sorted((SHARED / "reference").glob("*.md")) + sorted(SHARED.glob("*.md")):
        pages[str(path)] = path.read_text()
    return pages


_JWT = (_b64url({"alg": "HS256", "typ": "JWT"}) + "." + _b64url({"sub": "42", "iat": 1700000000})
        + ".Qm9ndXNTaWduYXR1cmVGb3JUZXN0c09ubHk")

FAKES: list[tuple[str, str]] = [
    ("AWS Access Key", "AKIAQ3EGRTY5WXKZPLMB"),
    ("AWS Access Key", "ASIAZ7XK2QWERTPLMNBV"),
    ("Artifactory Credentials", "AKCp8kqXy2ZtR7mVbN4wQ9sD"),
    ("Azure Storage Account access key", "AccountKey=" + "q7Vb3Nz" * 12 + "Tx9Kw2=="),
    ("Basic Auth Credentials", "S3cr3t-Passw0rd"),
    ("Discord Bot Token", "MTA4ODk5NzY1NDMyMTAxMjM0NQ.GhT2kX.aBcD3fGh1jKlMnOpQrStUvWxYz0"),
    ("GitHub Token", "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"),
    ("GitHub Token", "ghs_" + "Zq8Wm2Xn4Bv6Cr8Ty0Ui2Op4As6Df8Gh0Jk2"),
    ("GitLab Token", "glpat-" + "xY7kQ2mN9pR4sT6vW8zB"),
    ("Mailchimp Access Key", "3f2a9c1e4b5d6f7a8b9c0d1e2f3a4b5c-us12"),
    ("Private Key", "-----BEGIN RSA PRIVATE KEY-----"),
    ("Private Key", "-----BEGIN OPENSSH PRIVATE KEY-----"),
    ("Private Key", "-----BEGIN EC PRIVATE KEY-----"),
    ("PyPI Token", "pypi-AgEIcHlwaS5vcmc" + ("Q2Fr7kLm9Np3Rs5Tv7Wx9Yz1Ab3Cd5Ef7Gh9" * 2)[:72]),
    ("SendGrid API Key",
     "SG." + "aB3dE5fG7hJ9kL1mN3pQ5r" + "." + "S7tU9vW1xY3zA5bC7dE9fG1hJ3kL5mN7pQ9rS1tU3vw"),
    ("Slack Token", "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("Slack Token", "https://hooks.slack.com/services/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"),
    ("Square OAuth Secret", "sq0csp-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5bC7dE9f"),
    ("Stripe Access Key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("Stripe Access Key", "rk_live_" + "9Zx8Cv7Bn6Mm5Ll4Kk3Jj2Hh"),
    ("Telegram Bot Token", "1234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawq"),
    ("Twilio API Key", "AC" + "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"),
    ("Twilio API Key", "SK" + "f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1"),
    ("JSON Web Token", _JWT),
    ("OpenAI Token", "sk-proj-Ab3Cd5Ef7Gh9Ij1Kl3Mn" + "T3BlbkFJ" + "Qr5St7Uv9Wx1Yz3Ab5Cd"),
    ("NPM tokens", "npm_Ab3Cd5Ef7Gh9Ij1Kl3Mn5Op7Qr9St1Uv3Wx5"),
    ("GedWeb project token", "gwp_" + "Vq3sX9kLm2Np7Rt5Wz8Yb4Cd6Fg1Hj0Kl3Mn5Pq7Rs-"),
]

# The configured tokens of the test settings (tests/django_fixtures.py) are found too.
KNOWN = {"GedWeb admin token": "test-admin-token-0123456789abcdef-XYZ",
         "GedWeb memory write token": "test-memory-write-token-0123456789abcdef"}


def _shown(kind: str, secret: str) -> str:
    """The secret as it appears in text: a URL's password inside its URL, npm's in .npmrc."""
    if kind == "Basic Auth Credentials":
        return f"https://deploy:{secret}@git.example.org/team/app.git"
    if kind == "NPM tokens":
        return f"//registry.npmjs.org/:_authToken={secret}"
    return secret


def embeddings(kind: str, secret: str) -> list[str]:
    """The secret alone, in prose, and in code (a config line inside a fenced block)."""
    shown = _shown(kind, secret)
    return [
        shown,
        f"Handoff: the deploy failed at {SHA1}. I pasted the environment dump by mistake: "
        f"{shown} — rotate it. Chain hash {CHAIN}.",
        f"Report on the CI job ({UUID}):\n\n```python\nimport os\n\nCONFIG = {{\n"
        f"    \"endpoint\": \"https://api.example.org/v1\",\n    \"credential\": \"{shown}\",\n"
        f"    \"digest\": \"{SHA256}\",\n}}\n```\n",
    ]
