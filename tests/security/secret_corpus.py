"""The secret scanner's two corpora (issues 22, 35): what memory is full of, and credentials.

REALISTIC: entries as agents write them (decisions, ADRs, handoffs, reports,
in the style of docs/ and the GedPi reference), full of commit SHAs, SHA-256
digests, UUIDs, GedWeb chain hashes, base64 fixtures in code blocks and URLs
without credentials; ``realistic_corpus()`` adds at least 500 more, made from
a seed: commit ids and changelogs, digests, UUIDs, base64 images, URLs
without credentials, the example keys providers document as examples,
placeholders, test fixtures. ``realistic_pages()`` adds every page of docs/
and of the shared reference. None may be reported.

FORMATS: one generator per credential format (at least 60 providers and
configuration shapes), each making a fresh value of the format's real shape
from a random generator (``credentials(rng)``): synthetic, never a real key.
``embeddings`` puts each alone, in prose and in code. Every one must be
reported, at its position in the text as written.

Used by tests/security/test_secret_scan.py, test_secret_rules.py and
bench/secret_scan.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
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
    "tool.git@v1.4.2 pin the tool; pip install 'google-re2>=1.1,<2'.",
    "Token handling: the bearer token is sent as `Authorization: Bearer $GEDWEB_TOKEN`; "
    "password: must be at least 12 characters; token: the project's (gwp_...).",
    "```bash\ncurl -s -H \"Authorization: Bearer $TOKEN\" "
    "'https://gedweb.example.org/v1/projects/p/memory?order=desc&limit=20'\n```",
    f"Evidence: tests passed at {SHA1}; tree {SHA1_B}; snapshot digest sha256:{SHA256}; "
    f"request id {uuid.UUID(int=7).hex}; run 8f3e1a2b-9c4d-4e5f-a6b7-c8d9e0f1a2b3.",
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


# --- random values of a given shape -----------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
HEX = "0123456789abcdef"
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
BASE32 = string.ascii_uppercase + "234567"
B64 = ALNUM + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def pick(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def password(rng: random.Random) -> str:
    """A password as people choose them for services: letters, digits, a sign or two."""
    return pick(rng, ALNUM, rng.randint(10, 18)) + rng.choice("!%^*_~") + pick(rng, ALNUM, 3)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _pem(rng: random.Random, label: str, lines: int = 8) -> str:
    body = _b64(rng.randbytes(48 * lines))
    wrapped = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    return f"-----BEGIN {label}-----\n{wrapped}\n-----END {label}-----"


def _jwt(rng: random.Random) -> str:
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    claims = _b64url({"sub": str(rng.randint(1, 10**9)),
                      "iat": rng.randint(1_600_000_000, 1_800_000_000), "scope": "deploy"})
    return f"{header}.{claims}.{pick(rng, URLSAFE, 43)}"


@dataclass(frozen=True)
class Credential:
    """One fresh credential: its format, the secret, and the text it is pasted as."""

    format: str
    secret: str
    shown: str  # the secret in its setting (a URL, a config line, a file)
    block: bool = False  # a multi-line file: embedded in code as a fenced block


# Each format: a name and a maker (rng -> (secret, shown, block)). The secret is
# what must be found; ``shown`` is how agents paste it.
Maker = Callable[[random.Random], tuple[str, str, bool]]


def _alone(make: Callable[[random.Random], str]) -> Maker:
    def maker(rng: random.Random) -> tuple[str, str, bool]:
        value = make(rng)
        return value, value, False
    return maker


def _in(make: Callable[[random.Random], str], setting: str, block: bool = False) -> Maker:
    def maker(rng: random.Random) -> tuple[str, str, bool]:
        value = make(rng)
        return value, setting.format(value=value), block
    return maker


def _openai_project(rng: random.Random) -> str:
    return f"sk-proj-{pick(rng, URLSAFE, 74)}T3BlbkFJ{pick(rng, URLSAFE, 74)}"


def _github_fine_grained(rng: random.Random) -> str:
    return f"github_pat_11{pick(rng, UPPER_ALNUM, 20)}_{pick(rng, ALNUM, 59)}"


def _docker_auth(rng: random.Random) -> tuple[str, str, bool]:
    value = _b64(f"deploy-bot:{password(rng)}".encode())
    shown = json.dumps({"auths": {"registry.example.org": {"auth": value}}}, indent=2)
    return value, shown, True


def _gcp_service_account(rng: random.Random) -> tuple[str, str, bool]:
    key_id = pick(rng, HEX, 40)
    pem = _pem(rng, "PRIVATE KEY", 4)
    shown = json.dumps({
        "type": "service_account", "project_id": "acme-prod-4821", "private_key_id": key_id,
        "private_key": pem + "\n", "client_email": "deploy@acme-prod-4821.iam.gserviceaccount.com",
        "client_id": str(rng.randint(10**20, 10**21)), "token_uri":
            "https://oauth2.googleapis.com/token"}, indent=2)
    return key_id, shown, True


def _aws_credentials_file(rng: random.Random) -> tuple[str, str, bool]:
    secret = pick(rng, B64, 40)
    shown = (f"[default]\naws_access_key_id = AKIA{pick(rng, BASE32, 16)}\n"
             f"aws_secret_access_key = {secret}\nregion = eu-west-1")
    return secret, shown, True


def _netrc(rng: random.Random) -> tuple[str, str, bool]:
    secret = password(rng)
    return secret, f"machine api.example.org\n  login deploy\n  password {secret}\n", True


def _pem_maker(label: str, lines: int = 8) -> Maker:
    def maker(rng: random.Random) -> tuple[str, str, bool]:
        pem = _pem(rng, label, lines)
        return pem, pem, True
    return maker


def _encrypted_pkcs8(rng: random.Random) -> tuple[str, str, bool]:
    pem = _pem(rng, "ENCRYPTED PRIVATE KEY", 10)
    return pem, pem, True


def _pgp(rng: random.Random) -> tuple[str, str, bool]:
    body = _b64(rng.randbytes(300))
    wrapped = "\n".join(body[i:i + 64] for i in range(0, len(body), 64))
    block = (f"-----BEGIN PGP PRIVATE KEY BLOCK-----\nVersion: GnuPG v2\n\n{wrapped}\n"
             f"={pick(rng, B64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----")
    return block, block, True


FORMATS: dict[str, Maker] = {
    # The issue's list, first.
    "anthropic api key": _alone(lambda r: f"sk-ant-api03-{pick(r, URLSAFE, 93)}AA"),
    "anthropic admin key": _alone(lambda r: f"sk-ant-admin01-{pick(r, URLSAFE, 93)}AA"),
    "openai project key": _alone(_openai_project),
    "openai service account key": _alone(
        lambda r: f"sk-svcacct-{pick(r, URLSAFE, 74)}T3BlbkFJ{pick(r, URLSAFE, 74)}"),
    "openai legacy key (48 characters)": _alone(lambda r: f"sk-{pick(r, ALNUM, 48)}"),
    "github fine-grained token": _alone(_github_fine_grained),
    "github classic token": _alone(lambda r: f"ghp_{pick(r, ALNUM, 36)}"),
    "github oauth token": _alone(lambda r: f"gho_{pick(r, ALNUM, 36)}"),
    "github app token": _alone(lambda r: f"ghs_{pick(r, ALNUM, 36)}"),
    "github user-to-server token": _alone(lambda r: f"ghu_{pick(r, ALNUM, 36)}"),
    "github refresh token": _alone(lambda r: f"ghr_{pick(r, ALNUM, 36)}"),
    "google api key": _alone(lambda r: f"AIzaSy{pick(r, URLSAFE, 33)}"),
    "hugging face token": _alone(lambda r: f"hf_{pick(r, string.ascii_letters, 34)}"),
    "hugging face org token": _alone(lambda r: f"api_org_{pick(r, string.ascii_letters, 34)}"),
    "aws access key id": _alone(lambda r: f"AKIA{pick(r, BASE32, 16)}"),
    "aws temporary key id": _alone(lambda r: f"ASIA{pick(r, BASE32, 16)}"),
    "aws secret key (export)": _in(lambda r: pick(r, B64, 40),
                                   "export AWS_SECRET_ACCESS_KEY={value}"),
    "aws secret key (~/.aws/credentials)": _aws_credentials_file,
    "aws secret key (json)": _in(lambda r: pick(r, B64, 40), '{{"SecretAccessKey": "{value}"}}'),
    "redis url password": _in(password, "redis://:{value}@cache.internal:6379/0"),
    "libpq password": _in(password,
                          "host=db.internal port=5432 dbname=billing user=app password={value}"),
    "libpq password first": _in(password, "password={value} sslmode=require host=db.internal"),
    "pgpassword variable": _in(password, "export PGPASSWORD={value}"),
    "dotenv password": _in(password, "DB_PASSWORD={value}"),
    "pgpass line": _in(password, "db.internal:5432:billing:app:{value}"),
    "encrypted pkcs8 private key": _encrypted_pkcs8,
    "docker config.json auth": _docker_auth,
    "authorization bearer header": _in(lambda r: pick(r, URLSAFE, 40),
                                       "Authorization: Bearer {value}"),
    "stripe live secret key": _alone(lambda r: f"sk_live_{pick(r, ALNUM, 99)}"),
    "stripe restricted key": _alone(lambda r: f"rk_live_{pick(r, ALNUM, 24)}"),
    "twilio api key": _alone(lambda r: f"SK{pick(r, HEX, 32)}"),
    "twilio auth token": _in(lambda r: pick(r, HEX, 32), "TWILIO_AUTH_TOKEN={value}"),
    "sendgrid api key": _alone(lambda r: f"SG.{pick(r, URLSAFE, 22)}.{pick(r, URLSAFE, 43)}"),
    "slack webhook": _alone(lambda r: f"https://hooks.slack.com/services/T{pick(r, UPPER_ALNUM, 8)}"
                                      f"/B{pick(r, UPPER_ALNUM, 10)}/{pick(r, ALNUM, 24)}"),
    "slack bot token": _alone(lambda r: f"xoxb-{pick(r, string.digits, 12)}-"
                                        f"{pick(r, string.digits, 13)}-{pick(r, ALNUM, 24)}"),
    "slack user token": _alone(lambda r: f"xoxp-{pick(r, string.digits, 12)}-"
                                         f"{pick(r, string.digits, 12)}-"
                                         f"{pick(r, string.digits, 13)}-{pick(r, HEX, 32)}"),
    "discord bot token": _alone(lambda r: f"M{pick(r, URLSAFE, 25)}.{pick(r, URLSAFE, 6)}."
                                          f"{pick(r, URLSAFE, 38)}"),
    "discord webhook": _alone(lambda r: f"https://discord.com/api/webhooks/"
                                        f"{pick(r, string.digits, 19)}/{pick(r, URLSAFE, 68)}"),
    "telegram bot token": _alone(lambda r: f"{r.randint(10**9, 8 * 10**9)}:AA"
                                           f"{pick(r, URLSAFE, 33)}"),
    "gitlab personal token": _alone(lambda r: f"glpat-{pick(r, URLSAFE, 20)}"),
    "gitlab runner token": _alone(lambda r: f"glrt-{pick(r, URLSAFE, 20)}"),
    "gitlab deploy token": _alone(lambda r: f"gldt-{pick(r, URLSAFE, 20)}"),
    "npm token": _alone(lambda r: f"npm_{pick(r, ALNUM, 36)}"),
    "npm token in .npmrc": _in(lambda r: f"npm_{pick(r, ALNUM, 36)}",
                               "//registry.npmjs.org/:_authToken={value}"),
    "pypi token": _alone(lambda r: f"pypi-AgEIcHlwaS5vcmc{pick(r, URLSAFE, 160)}"),
    "azure ad client secret": _alone(lambda r: f"{pick(r, ALNUM, 3)}{r.randint(0, 9)}Q~"
                                               f"{pick(r, URLSAFE + '~.', 34)}"),
    "azure storage account key": _in(
        lambda r: pick(r, B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={value};"
        "EndpointSuffix=core.windows.net"),
    "azure service bus key": _in(
        lambda r: pick(r, B64, 43) + "=",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        "SharedAccessKey={value}"),
    "azure sas url": _in(lambda r: _b64(r.randbytes(32)).replace("+", "%2B").replace("=", "%3D"),
                         "https://acme.blob.core.windows.net/exports/a.csv?sv=2022-11-02&ss=b"
                         "&srt=o&sp=r&se=2026-12-31T00:00:00Z&sig={value}"),
    "compose file password": _in(password, "services:\n  db:\n    environment:\n"
                                           "      POSTGRES_PASSWORD: {value}\n", True),
    "telegram bot token (any first letters)": _alone(
        lambda r: f"{r.randint(10**8, 8 * 10**9)}:{pick(r, URLSAFE, 35)}"),
    "gcp service-account json": _gcp_service_account,
    "openssh private key": _pem_maker("OPENSSH PRIVATE KEY"),
    "pkcs8 private key": _pem_maker("PRIVATE KEY"),
    "rsa private key": _pem_maker("RSA PRIVATE KEY"),
    "ec private key": _pem_maker("EC PRIVATE KEY", 3),
    "pgp private key block": _pgp,
    "postgres url password": _in(password, "postgres://app:{value}@db.internal:5432/billing"),
    "postgresql+psycopg url password": _in(password,
                                           "postgresql+psycopg://app:{value}@db:5432/billing"),
    "mysql url password": _in(password, "mysql://root:{value}@mysql.internal:3306/shop"),
    "mongodb+srv url password": _in(password,
                                    "mongodb+srv://admin:{value}@cluster0.ab1cd.mongodb.net/app"),
    "amqp url password": _in(password, "amqps://worker:{value}@mq.internal:5671/%2F"),
    "basic-auth url": _in(password, "https://deploy:{value}@git.example.org/team/app.git"),
    "netrc password": _netrc,
    "json web token": _alone(_jwt),
    "gedweb project token": _alone(lambda r: f"gwp_{pick(r, URLSAFE, 43)}"),
    # More providers, from gitleaks' rule set.
    "shopify access token": _alone(lambda r: f"shpat_{pick(r, HEX, 32)}"),
    "digitalocean token": _alone(lambda r: f"dop_v1_{pick(r, HEX, 64)}"),
    "databricks token": _alone(lambda r: f"dapi{pick(r, HEX, 32)}"),
    "doppler token": _alone(lambda r: f"dp.pt.{pick(r, ALNUM, 43)}"),
    "linear api key": _alone(lambda r: f"lin_api_{pick(r, ALNUM, 40)}"),
    "notion token": _alone(lambda r: f"ntn_{pick(r, string.digits, 11)}{pick(r, ALNUM, 35)}"),
    "postman api key": _alone(lambda r: f"PMAK-{pick(r, HEX, 24)}-{pick(r, HEX, 34)}"),
    "pulumi token": _alone(lambda r: f"pul-{pick(r, HEX, 40)}"),
    "sentry user token": _alone(lambda r: f"sntryu_{pick(r, HEX, 64)}"),
    "grafana service account token": _alone(lambda r: f"glsa_{pick(r, ALNUM, 32)}_"
                                                      f"{pick(r, HEX, 8)}"),
    "age secret key": _alone(lambda r: f"AGE-SECRET-KEY-1{pick(r, BECH32, 58)}"),
    "hashicorp vault token": _alone(lambda r: f"hvs.{pick(r, URLSAFE, 100)}"),
    "planetscale token": _alone(lambda r: f"pscale_tkn_{pick(r, URLSAFE, 43)}"),
    "dynatrace token": _alone(lambda r: f"dt0c01.{pick(r, UPPER_ALNUM, 24)}."
                                        f"{pick(r, UPPER_ALNUM, 64)}"),
    "easypost key": _alone(lambda r: f"EZAK{pick(r, ALNUM, 54)}"),
    "rubygems key": _alone(lambda r: f"rubygems_{pick(r, HEX, 48)}"),
    "prefect key": _alone(lambda r: f"pnu_{pick(r, ALNUM, 36)}"),
    "readme key": _alone(lambda r: f"rdme_{pick(r, LOWER_ALNUM, 70)}"),
    "perplexity key": _alone(lambda r: f"pplx-{pick(r, ALNUM, 48)}"),
    "brevo (sendinblue) key": _alone(lambda r: f"xkeysib-{pick(r, HEX, 64)}-"
                                               f"{pick(r, ALNUM, 16)}"),
    "atlassian api token": _alone(lambda r: f"ATATT3{pick(r, URLSAFE, 186)}"),
    "heroku key": _alone(lambda r: f"HRKU-AA{pick(r, URLSAFE, 58)}"),
    "square access token": _alone(lambda r: f"EAAA{pick(r, URLSAFE, 60)}"),
    "cloudflare origin ca key": _alone(lambda r: f"v1.0-{pick(r, HEX, 24)}-{pick(r, HEX, 146)}"),
    "flyio token": _alone(lambda r: f"fo1_{pick(r, URLSAFE, 43)}"),
    "mailchimp key": _in(lambda r: f"{pick(r, HEX, 32)}-us{r.randint(10, 21)}",
                         "MAILCHIMP_API_KEY={value}"),
    "mailgun key": _in(lambda r: f"key-{pick(r, HEX, 32)}", "MAILGUN_API_KEY={value}"),
    "1password service account token": _alone(lambda r: "ops_eyJ" + pick(r, B64, 260)),
    "shopify shared secret": _alone(lambda r: f"shpss_{pick(r, HEX, 32)}"),
    "clojars token": _alone(lambda r: f"CLOJARS_{pick(r, LOWER_ALNUM, 60)}"),
}


def credentials(rng: random.Random) -> list[Credential]:
    """One fresh credential of every format."""
    made = []
    for name, maker in FORMATS.items():
        secret, shown, block = maker(rng)
        made.append(Credential(name, secret, shown, block))
    return made


# The configured tokens of the test settings (tests/django_fixtures.py) are found too.
KNOWN = {"gedweb-admin-token": "test-admin-token-0123456789abcdef-XYZ",
         "gedweb-memory-write-token": "test-memory-write-token-0123456789abcdef"}


def embeddings(credential: Credential) -> list[str]:
    """The credential alone, in prose, and in code (a string or a fenced file)."""
    shown = credential.shown
    if credential.block:
        code = (f"Report on the CI job ({UUID}): the runner had this file:\n\n```\n"
                f"{shown}\n```\n\nDigest {SHA256}.")
        prose = (f"Handoff: the deploy failed at {SHA1}. I pasted the file by mistake:\n\n"
                 f"{shown}\n\nRotate it. Chain hash {CHAIN}.")
    else:
        code = (f"Report on the CI job ({UUID}):\n\n```python\nimport os\n\nCONFIG = {{\n"
                f"    \"endpoint\": \"https://api.example.org/v1\",\n"
                f"    \"credential\": \"{shown}\",\n    \"digest\": \"{SHA256}\",\n}}\n```\n")
        prose = (f"Handoff: the deploy failed at {SHA1}. I pasted the environment dump by "
                 f"mistake: {shown}, rotate it. Chain hash {CHAIN}.")
    return [shown, prose, code]


# --- hostile megabytes ------------------------------------------------------------------------

# Each rule's worst input, a megabyte of it: runs of its prefix, of its
# characters, of separators, and decoys matching a rule's regex by the
# hundred thousand that its filters then drop (timed by the test and the bench).
HOSTILE = {
    "jwt runs": "eyJ" * 333_333,
    "jwt segments": "eyJa." * 200_000,
    "openai prefixes": "sk-" * 333_333,
    "openai marks": "T3BlbkFJ" * 125_000,
    "npm marks": "//a/:_authToken=" * 62_500,
    "npm lines": "//a/:_authToken=\n" * 58_823,
    "assignment spaces": "ibm_cloud_iam_key" + " " * 1_000_000 + "!",
    "url separators": "://a:" * 200_000,
    "aws keywords": "aws key " * 125_000,
    "slack groups": "xoxb-" + "1-" * 500_000,
    "slack decoys": "xoxa-1-a-aaaaaa " * 62_500,
    "url passwords": "ab://:cd@e " * 100_000,
    "pgpass decoys": " a:1:b:c:dddd" * 77_000,
    "libpq decoys": "password=x host=" * 62_500,
    "docker decoys": '"auth":"aaaaaa" ' * 62_500,
    "zero-width spaces": "\u200b" * 1_000_000,
    "fullwidth letters": "\uff53" * 1_000_000,
    "combining marks": "e\u0301" * 500_000,
    "private key headers": "-----BEGIN PRIVATE KEY-----\n" * 35_000,
    "one character": "a" * 1_000_000,
    "newlines": "\n" * 1_000_000,
}


# --- what memory is full of -------------------------------------------------------------------

# Example values that providers publish in their documentation.
DOCUMENTED_EXAMPLES = [
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "sk_test_BQokikJOvBiI2HlWgH4olfQ2",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
    "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "github_pat_xxxxxxxxxxxxxxxxxxxxxx_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "sk-ant-api03-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "ACXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "curl -H 'Authorization: Bearer ghp_16C7e42F292c6912E7710c838347Ae178B4a' "
    "https://api.github.com/user",
    "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
    "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs",
    "110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJ"
    "PLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
    "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0"
    "dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
    "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
    "xoxb-your-token",
    "postgres://user:password@localhost:5432/mydb",
    "postgresql://postgres:postgres@localhost:5432/postgres",
    "mysql://root:root@localhost:3306/test",
    "amqp://guest:guest@localhost:5672/",
    "mongodb+srv://<username>:<password>@cluster0.example.mongodb.net/",
    "redis://:${REDIS_PASSWORD}@redis:6379/0",
    "host=localhost port=5432 dbname=mydb user=postgres password=secret",
    "export AWS_SECRET_ACCESS_KEY=$AWS_SECRET",
    "aws_secret_access_key = YOUR_SECRET_ACCESS_KEY",
    "Authorization: Bearer <token>",
    "Authorization: Bearer ${API_TOKEN}",
    "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com/v1/me",
    "machine api.example.org login deploy password <password>",
    "localhost:5432:*:postgres:<password>",
    '{"auths": {"https://index.docker.io/v1/": {"auth": "dXNlcm5hbWU6cGFzc3dvcmQ="}}}',
    "OPENAI_API_KEY=sk-...",
    "ANTHROPIC_API_KEY=sk-ant-...",
    "HF_TOKEN=hf_...",
    "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
]

_COMMIT_TEMPLATES = [
    "Commit {sha1} moved the head read to the (project, seq) index.",
    "Fixed in {short} (see {sha1}); the regression came with {short2}.",
    "git log --oneline:\n{short} keyword: drop the unread load time\n{short2} recall: read hits "
    "by primary key\n{short3} docs: what is not measured yet",
    "commit {sha1}\nAuthor: Vera Lind <vera@example.org>\nDate:   Mon Dec 7 17:27:03 2026 "
    "+0000\n\n    Handle the empty checkout",
    "Reverted {sha1} because the migration took an exclusive lock for 40 s on the large table.",
    "Cherry-picked {short} onto release/1.4; tag v1.4.{n} points at {sha1}.",
    "Bisect: good {short}, bad {short2}; first bad commit {sha1}.",
    "The CI run for {sha1} passed on SQLite and PostgreSQL ({n} tests, {m} skipped).",
]
_CHANGELOG_TEMPLATES = [
    "## 1.{n}.{m} ({date})\n\n- {short} Fix the recall cache key\n- {short2} Speed up the "
    "keyword index\n- {short3} Docs: operations",
    "* {sha1} Bump django from 6.0.{m} to 6.0.{n}\n* {sha1b} Bump numpy",
    "Changelog:\n  [{short}] secretscan: NFKC view\n  [{short2}] admin: findings count\n"
    "  [{short3}] bench: hostile megabyte",
]
_DIGEST_TEMPLATES = [
    "sha256 {sha256}  gedweb-1.{n}.{m}.tar.gz",
    "SHA256 (requirements/base.txt) = {sha256}",
    "docker pull registry.example.org/gedweb@sha256:{sha256}",
    "The chain head is {sha256}; the checkpoint at seq {n}000 signs {sha256b}.",
    "pip hash: --hash=sha256:{sha256} --hash=sha256:{sha256b}",
    "Integrity: sha512-{b64_64} for left-pad@1.3.{m}.",
    "sha512sum: {sha512}",
    "ETag \"{md5}\" on the export; Content-MD5 {b64md5}.",
    "Evidence digest {sha256}, tree {sha1}, blob {sha1b}.",
]
_UUID_TEMPLATES = [
    "Entry {uuid} corrects seq {n}: the decision was reverted.",
    "Request {uuid} failed with 409 conflict; retried as {uuid2}.",
    "Task T{n} ({uuid}) is done; the next one is {uuid2}.",
    "trace_id={hex32} span_id={hex16} parent={hex16b}",
    "The candidate {uuid} was promoted to entry {n}; its idempotency key was "
    "import-{uuid2}.",
    "Object key backups/{uuid}.sql.gz, uploaded {date}T06:45:00Z, {n} MiB.",
]
_URL_TEMPLATES = [
    "See https://gitlab.example.org/team/app/-/merge_requests/{n} and "
    "https://github.com/example/gedweb/pull/{m}.",
    "DATABASE_URL=postgres://app@db.internal:5432/billing (the password comes from PGPASSFILE)",
    "redis://localhost:6379/{m} holds the rate counters; amqp://mq.internal:5672/ the queue.",
    "git clone git@github.com:example/gedweb.git && cd gedweb && git checkout {short}",
    "ssh://git@gitlab.example.org:2222/team/app.git is the mirror.",
    "https://docs.example.org/v1/api?page={n}&limit={m}&order=desc#pagination",
    "mongodb://mongo-0.mongo:27017,mongo-1.mongo:27017/app?replicaSet=rs0",
    "http://127.0.0.1:8000/v1/projects/p{n}/memory?after={m}",
    "The webhook is https://hooks.example.org/services/build-{n} (no token in it).",
    "s3://backups-example/gedweb/{date}/{uuid}.tar.zst",
    "https://user@example.org/path is a URL with a user and no password.",
    "jdbc:postgresql://db.internal:5432/billing?sslmode=require",
]
_FIXTURE_TEMPLATES = [
    "```python\nFIXTURE = \"{b64_96}\"\nPNG = \"data:image/png;base64,{png}\"\n```",
    "![chart](data:image/png;base64,{png})",
    "<img src=\"data:image/gif;base64,R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEA"
    "Ow==\" alt=\"pixel\">",
    "```json\n{{\"id\": \"{uuid}\", \"seq\": {n}, \"hash\": \"{sha256}\", \"prev\": "
    "\"{sha256b}\"}}\n```",
    "def test_chain():\n    assert entry.hash == \"{sha256}\"\n    assert entry.prev_hash == "
    "\"{sha256b}\"",
    "platform linux -- Python 3.12.{m}, pytest-8.3.{n}\ncollected {n}{m} items\n\n"
    "tests/test_chain.py ........ [100%]",
    "fixtures/{uuid}.json: {{\"token\": \"<redacted>\", \"password\": \"********\"}}",
    "PASSWORD_HASHERS uses argon2; a stored hash looks like "
    "argon2$argon2id$v=19$m=102400,t=2,p=8${b64_22}${b64_43}",
    "The Django SECRET_KEY comes from the environment (GEDWEB_SECRET_KEY); tests use "
    "'insecure-test-key'.",
    "bcrypt: $2b$12${b64_53}",
    "```yaml\nimage: postgres:16\nenvironment:\n  POSTGRES_PASSWORD: ${{POSTGRES_PASSWORD}}\n```",
    "Token handling: `Authorization: Bearer $GEDWEB_TOKEN`; tokens are gwp_ and 43 characters.",
    "The fingerprint of the allowed finding is {sha256} (allowed by vera, reason: example).",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64_43} vera@laptop",
    "-----BEGIN PUBLIC KEY-----\n{b64_64}\n{b64_64b}\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\n{b64_64}\n{b64_64b}\n-----END CERTIFICATE-----",
    "gpg: Signature made {date}; key fingerprint {HEX40}",
    "IPv6 fe80::{hex4}:{hex4b}:{hex4c}:1 and 2001:db8:{hex4}:{hex4b}:{hex4c}:1:2:3 are on the "
    "allowlist.",
    "At 10:{m}:{n} the job ran; at 11:{m}:{n} it stopped.",
    "env of the runner:\nPWD=/srv/app/releases/{short}\nOLDPWD=/srv/app\nHOME=/root\n"
    "SHELL=/bin/bash\nDB_PASSWORD=${{DB_PASSWORD}}\nPGPASSFILE=/run/secrets/pgpass",
    "The ULID 01J{ULID} and the KSUID 2{KSUID} name the run.",
]


def _values(rng: random.Random) -> dict[str, object]:
    sha1 = pick(rng, HEX, 40)
    return {
        "sha1": sha1, "sha1b": pick(rng, HEX, 40), "short": pick(rng, HEX, 7),
        "short2": pick(rng, HEX, 7), "short3": pick(rng, HEX, 7),
        "sha256": pick(rng, HEX, 64), "sha256b": pick(rng, HEX, 64),
        "sha512": pick(rng, HEX, 128), "md5": pick(rng, HEX, 32),
        "b64md5": _b64(rng.randbytes(16)), "b64_64": _b64(rng.randbytes(48)),
        "b64_64b": _b64(rng.randbytes(48)), "b64_96": _b64(rng.randbytes(72)),
        "b64_22": _b64(rng.randbytes(16)).rstrip("="), "b64_43": _b64(rng.randbytes(32))[:43],
        "b64_53": pick(rng, ALNUM + "./", 53), "png": _b64(b"\x89PNG\r\n\x1a\n" +
                                                          rng.randbytes(rng.randint(60, 600))),
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "uuid2": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "hex32": pick(rng, HEX, 32), "hex16": pick(rng, HEX, 16), "hex16b": pick(rng, HEX, 16),
        "hex4": pick(rng, HEX, 4), "hex4b": pick(rng, HEX, 4), "hex4c": pick(rng, HEX, 4),
        "HEX40": pick(rng, "0123456789ABCDEF", 40), "ULID": pick(rng, UPPER_ALNUM, 23),
        "KSUID": pick(rng, ALNUM, 26), "n": rng.randint(1, 999), "m": rng.randint(0, 59),
        "date": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    }


def realistic_corpus(seed: int = 35, size: int = 520) -> list[str]:
    """``size`` entries of what memory is full of (none a secret), made from ``seed``."""
    rng = random.Random(seed)
    templates = (_COMMIT_TEMPLATES + _CHANGELOG_TEMPLATES + _DIGEST_TEMPLATES + _UUID_TEMPLATES
                 + _URL_TEMPLATES + _FIXTURE_TEMPLATES)
    entries = list(REALISTIC)
    for example in DOCUMENTED_EXAMPLES:
        entries.append(example)
        entries.append(f"The provider's docs show `{example}` as the example; ours is in the "
                       "vault.")
    while len(entries) < size:
        template = templates[len(entries) % len(templates)]
        entries.append(template.format(**_values(rng)))
    return entries
