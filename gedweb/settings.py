"""GedWeb settings, read from the environment (see docs/configuration.md).

Every variable is parsed strictly: a malformed value raises
ImproperlyConfigured at start instead of silently falling back to a default.
"""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import environ  # type: ignore[import-untyped]  # django-environ ships no types
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from gedweb import installation
from gedweb.lib.rates import Rate

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(name: str, default: bool) -> bool:
    # django-environ maps any unknown word to False; a typo in a security
    # switch must stop the server instead.
    raw = env.str(name, default="")
    if raw == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, not {raw!r}")


def _choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value: str = env.str(name, default=default).strip()
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _addresses(name: str) -> list[str]:
    """A comma-separated list of IP addresses or networks; anything else stops the start."""
    values = [value.strip() for value in env.str(name, default="").split(",") if value.strip()]
    for value in values:
        try:
            ipaddress.ip_network(value)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name} must list IP addresses or networks, not {value!r}"
            ) from None
    return values


PRODUCTION = _bool("GEDWEB_PRODUCTION", False)
# Off unless asked for, as Django's own default is, in development too: the
# error pages a newcomer meets are the ones production shows.
DEBUG = _bool("DJANGO_DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG cannot be true in production mode")

# The reverse proxies whose X-Forwarded-Proto and X-Forwarded-For are
# believed; from any other client those headers mean nothing. gunicorn.conf.py
# passes the same list to gunicorn's forwarded_allow_ips, which alone decides
# whether a request came over HTTPS (request.is_secure()).
TRUSTED_PROXIES = _addresses("GEDWEB_TRUSTED_PROXIES")

# Clients that may read GET /metrics without the admin token, matched
# against REMOTE_ADDR alone (gedweb/metrics.py). A reverse proxy's address
# would open the metrics to everyone the proxy serves, so the two lists may
# not meet: behind a proxy, scrape with the admin token.
METRICS_ALLOW = _addresses("GEDWEB_METRICS_ALLOW")
_metrics_through_proxies = [
    allowed for allowed in METRICS_ALLOW
    if any(ipaddress.ip_network(allowed).overlaps(ipaddress.ip_network(proxy))
           for proxy in TRUSTED_PROXIES)
]
if _metrics_through_proxies:
    raise ImproperlyConfigured(
        "GEDWEB_METRICS_ALLOW must not include a proxy of GEDWEB_TRUSTED_PROXIES "
        f"({', '.join(_metrics_through_proxies)}): every client behind it would read /metrics; "
        "scrape through the proxy with the admin token instead"
    )

# The installation's own files: the default SQLite database, the mirrors and,
# in development, the secret key. 0700, since they hold every session key
# and every project's memory (gedweb/installation.py).
DATA_DIR = installation.private_directory(
    Path(env.str("GEDWEB_DATA_DIR", default="./.data")).resolve()
)

ADMIN_TOKEN: str | None = env.str("GEDWEB_ADMIN_TOKEN", default="") or None
# Ferryman's name for the same boundary (contract section 9) is an alias: a
# Ferryman user's environment keeps working. Two different values would leave
# one of them silently ignored, and with it the boundary someone meant to set.
_memory_write_tokens = {
    env.str(name, default="")
    for name in ("GEDWEB_MEMORY_WRITE_TOKEN", "FERRYMAN_MEMORY_WRITE_TOKEN")
} - {""}
if len(_memory_write_tokens) > 1:
    raise ImproperlyConfigured(
        "GEDWEB_MEMORY_WRITE_TOKEN and FERRYMAN_MEMORY_WRITE_TOKEN (its Ferryman alias) are "
        "both set, to different values: set one of them"
    )
MEMORY_WRITE_TOKEN: str | None = next(iter(_memory_write_tokens), None)
MIRROR_WRITER = _choice("GEDWEB_MIRROR_WRITER", "inline", ("inline", "follower"))
# Recall by meaning (docs/recall.md): the embedder of gedweb/embedding.py.
# "minilm" is the shipped model; "hashing" a small deterministic one (the
# suite's); "off" leaves recall to its keyword ranking, answering degraded.
RECALL_MODEL = _choice("GEDWEB_RECALL_MODEL", "minilm", ("minilm", "hashing", "off"))
# Above this many entries, a process keeps a project's vectors as signs only
# (48 bytes an entry) and scores a shortlist exactly (memory/recall/vectors.py).
RECALL_EXACT_ROWS = env.int("GEDWEB_RECALL_EXACT_ROWS", default=200_000)
MEMORY_ROOT = Path(env.str("GEDWEB_MEMORY_ROOT", default=str(DATA_DIR / "bridge-memory"))).resolve()

# prometheus_client's multiprocess mode: gunicorn.conf.py sets the variable
# for `make run`, so every worker writes its counters into this directory
# and /metrics adds them up. prometheus_client reads it once, at import,
# and would fail on the first request (or count into the working directory,
# for an empty value) if it named no directory: refused at start instead.
# Unset (tests, manage.py, runserver), metrics stay in the process.
_multiprocess_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _multiprocess_dir is not None and not Path(_multiprocess_dir).is_dir():
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR must name a directory, not {_multiprocess_dir!r}"
    )
METRICS_MULTIPROCESS_DIR = Path(_multiprocess_dir) if _multiprocess_dir is not None else None
DEMO_PROJECT = _bool("GEDWEB_DEMO_PROJECT", not PRODUCTION)

SECRET_KEY_FALLBACKS = [
    key.strip() for key in env.str("DJANGO_SECRET_KEY_FALLBACKS", default="").split(",")
    if key.strip()
]
# Chain checkpoints are signed with a key of their own (memory/checkpoints.py),
# so the secret key and the signing key rotate independently.
SIGNING_KEY_FALLBACKS = [
    key.strip() for key in env.str("GEDWEB_SIGNING_KEY_FALLBACKS", default="").split(",")
    if key.strip()
]

if PRODUCTION:
    _missing = [
        name
        for name, value in (
            ("DJANGO_SECRET_KEY", env.str("DJANGO_SECRET_KEY", default="")),
            ("GEDWEB_SIGNING_KEY", env.str("GEDWEB_SIGNING_KEY", default="")),
            ("GEDWEB_ADMIN_TOKEN", ADMIN_TOKEN),
            ("GEDWEB_MEMORY_WRITE_TOKEN", MEMORY_WRITE_TOKEN),
        )
        if not value
    ]
    if _missing:
        raise ImproperlyConfigured(f"production mode needs {', '.join(_missing)}")
    _problems = [
        installation.secret_key_problem("DJANGO_SECRET_KEY", env.str("DJANGO_SECRET_KEY")),
        *(
            installation.secret_key_problem(f"DJANGO_SECRET_KEY_FALLBACKS[{index}]", key)
            for index, key in enumerate(SECRET_KEY_FALLBACKS)
        ),
        installation.secret_key_problem("GEDWEB_SIGNING_KEY", env.str("GEDWEB_SIGNING_KEY")),
        *(
            installation.secret_key_problem(f"GEDWEB_SIGNING_KEY_FALLBACKS[{index}]", key)
            for index, key in enumerate(SIGNING_KEY_FALLBACKS)
        ),
        installation.token_problem("GEDWEB_ADMIN_TOKEN", ADMIN_TOKEN or ""),
        installation.token_problem("GEDWEB_MEMORY_WRITE_TOKEN", MEMORY_WRITE_TOKEN or ""),
    ]
    if any(_problems):
        raise ImproperlyConfigured("; ".join(problem for problem in _problems if problem))
    if ADMIN_TOKEN == MEMORY_WRITE_TOKEN:
        raise ImproperlyConfigured(
            "GEDWEB_ADMIN_TOKEN and GEDWEB_MEMORY_WRITE_TOKEN must differ in production"
        )
    if env.str("GEDWEB_SIGNING_KEY") == env.str("DJANGO_SECRET_KEY"):
        raise ImproperlyConfigured(
            "GEDWEB_SIGNING_KEY and DJANGO_SECRET_KEY must differ: each rotates on its own"
        )
    if DEMO_PROJECT:
        raise ImproperlyConfigured("GEDWEB_DEMO_PROJECT cannot be enabled in production")
    SECRET_KEY = env.str("DJANGO_SECRET_KEY")
    SIGNING_KEY = env.str("GEDWEB_SIGNING_KEY")
else:
    # One key of each kind per installation, kept in the data directory
    # (0600) and read by every worker and command: sessions and checkpoints
    # signed by one process verify in every other, and across restarts.
    SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="") or installation.installation_secret_key(
        DATA_DIR
    )
    SIGNING_KEY = env.str("GEDWEB_SIGNING_KEY", default="") or (
        installation.installation_signing_key(DATA_DIR)
    )

_checkpoint_every = env.str("GEDWEB_CHECKPOINT_EVERY", default="100").strip()
if not (_checkpoint_every.isascii() and _checkpoint_every.isdigit()) or int(_checkpoint_every) < 1:
    raise ImproperlyConfigured(
        f"GEDWEB_CHECKPOINT_EVERY must be a whole number of at least 1, not {_checkpoint_every!r}"
    )
CHECKPOINT_EVERY = int(_checkpoint_every)

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "memory",
    "governance",
    "oauth2_provider",
]

MIDDLEWARE = [
    # First, so a request's time includes every other middleware, and every
    # answer counts, refusals included (gedweb/metrics.py).
    "gedweb.metrics.RequestMetricsMiddleware",
    "gedweb.middleware.RequestShapeMiddleware",
    "gedweb.middleware.OwnNotFoundPageMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "gedweb.urls"
WSGI_APPLICATION = "gedweb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'gedweb.sqlite3'}")}
_db = DATABASES["default"]
if not _db.get("ENGINE"):
    # django-environ returns an empty config for text it cannot parse.
    raise ImproperlyConfigured(
        "DATABASE_URL must be a database URL such as sqlite:///path or postgres://user@host/name"
    )
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # Django's backend plus a writer queue, so concurrent transactions hand
    # the write lock over at once instead of sleeping in SQLite's busy
    # handler (gedweb/db/sqlite3/base.py).
    _db["ENGINE"] = "gedweb.db.sqlite3"
    # Created private; an existing directory of the operator's choice is
    # left as it is (the database files themselves are made 0600 by the
    # backend).
    Path(_db["NAME"]).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _db["OPTIONS"] = {
        # WAL lets readers run beside the single writer; synchronous=FULL makes
        # an acknowledged commit survive power loss. BEGIN IMMEDIATE takes the
        # write lock up front (after the writer queue), so a transaction never
        # fails with "database is locked" when a read would upgrade to a write.
        "init_command": (
            "PRAGMA journal_mode=WAL;PRAGMA synchronous=FULL;PRAGMA foreign_keys=ON"
        ),
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        **_db.get("OPTIONS", {}),
    }
    # Tests need a real file: threads use separate connections, which an
    # in-memory database would not share. The process id keeps two test runs
    # on one machine from sharing (and destroying) each other's database.
    _db["TEST"] = {"NAME": str(BASE_DIR / ".data" / f"test-gedweb-{os.getpid()}.sqlite3")}
elif _db["ENGINE"] == "django.db.backends.postgresql":
    _db["TEST"] = {"NAME": f"test_{_db['NAME']}_{os.getpid()}"}
# Keep connections across requests: opening one (and, on SQLite, running the
# PRAGMAs) per request costs more than the append itself.
_db.setdefault("CONN_MAX_AGE", 60)
_db.setdefault("CONN_HEALTH_CHECKS", True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
if not PRODUCTION:
    # Development and tests serve straight from the finders, no collectstatic.
    STORAGES["staticfiles"] = {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
    }
    WHITENOISE_USE_FINDERS = True
    # Scan the static files once at start, never per request (WhiteNoise's
    # DEBUG default rescans them on every request, API calls included).
    WHITENOISE_AUTOREFRESH = False

# The API enforces its own 1 MiB limit in its JSON parser (413); this covers
# form posts to the admin and pages.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
# Django's default, named: more query parameters (or form fields) than this
# is a 400 (the JSON shape under /v1, gedweb.exceptions), after the 401.
DATA_UPLOAD_MAX_NUMBER_FIELDS = 1000
API_MAX_BODY_BYTES = 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memory.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["memory.api.permissions.IsAuthenticatedPrincipal"],
    "DEFAULT_PARSER_CLASSES": ["gedweb.parsers.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "gedweb.exceptions.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    # ?format= is a parameter of GedWeb's own (the context bundle's text or
    # json), not DRF's renderer override (gedweb.api.views.GedWebAPIView).
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GedWeb API",
    "DESCRIPTION": (
        "Durable memory for agent-driven software projects. Projects and their "
        "tokens; append-only memory entries (hash-chained and signed, corrections as "
        "new entries), review candidates, recall by meaning and by keyword, the "
        "Markdown mirror and chain verification; durable documents (PROJECT.md, "
        "CONTEXT.md, ADRs, reports, handoffs); GedPi governance (work items, "
        "revisions, evidence, guards, lifecycle), standards imports and their "
        "decisions, skills, the framed context bundle, checkout sync and the trust "
        "ledger. Every error is JSON {code, message, fields?}; request bodies are "
        "JSON objects without unknown fields; tokens are rate limited (429 with "
        "Retry-After). Agents also reach it over MCP at /mcp."
    ),
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "gedweb.api.schema.house_rules",
    ],
    "VERSION": "v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "MemoryWriteToken": {"type": "apiKey", "in": "header", "name": "X-Memory-Token"},
        }
    },
    "SECURITY": [{"BearerToken": []}],
    # Swagger UI from the installed sidecar package: no external CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Team pages: Django sessions, with the login form at /accounts/login/.
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "gedweb": {"level": "INFO"},
        "memory": {"level": "INFO"},
        # Failed logins (WARNING), lockouts (WARNING), successful logins (INFO).
        "axes": {"level": "INFO"},
    },
}

# --- Logins: throttling password guessing (django-axes) ---------------------
# Both login pages (/accounts/login/, /admin/login/) authenticate through
# django.contrib.auth, so axes sees every attempt of either. A login is
# refused, before its password is checked, once a username OR a client
# address has AXES_FAILURE_LIMIT failures within the cool-off; the refusal
# is the page of gedweb.logins.lockout_response (429). docs/security.md#logins.

INSTALLED_APPS += ["axes"]
# Last, so that it sees the lockout flag the login view's authenticate() set
# and replaces that view's response.
MIDDLEWARE += ["axes.middleware.AxesMiddleware"]
AUTHENTICATION_BACKENDS = [
    "gedweb.logins.ThrottledBackend",
    "django.contrib.auth.backends.ModelBackend",
]

# Each parameter counts on its own: guessing one account from many
# addresses, or many accounts from one address. axes 8 has one limit for
# all parameters (AXES_FAILURE_LIMIT compares with the largest count, and
# its callable form is not told which parameter it is for), so 5 holds for
# both.
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
# A successful login clears its username's counter, but not its address's:
# axes' own reset would also clear that address's failures against other
# accounts (gedweb.logins.DatabaseHandler, CacheHandler).
AXES_RESET_ON_SUCCESS = False
# A refused attempt counts too and restarts the cool-off, so the lock ends
# only after 15 quiet minutes (the time the lockout page names).
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True
AXES_LOCKOUT_CALLABLE = "gedweb.logins.lockout_response"
# ipware's trusted-proxy list is matched against the last entries of the
# X-Forwarded-For chain, not against the peer, and it prefers a public
# address from the header over a private REMOTE_ADDR; either would let a
# client choose its own address. gedweb.logins reads the header only when
# REMOTE_ADDR is one of TRUSTED_PROXIES.
AXES_CLIENT_IP_CALLABLE = "gedweb.logins.client_ip_address"
AXES_USERNAME_CALLABLE = "gedweb.logins.username"
AXES_CLIENT_STR_CALLABLE = "gedweb.logins.client_str"
# The log names the username and address of a failed login: that is what an
# operator needs to read it. The password is never logged (axes masks it in
# the stored form data, and gedweb.logins.client_str never sees it).
AXES_SENSITIVE_PARAMETERS: list[str] = []
# No "AXES: BEGIN" line at the start of every process and command.
AXES_VERBOSE = False


def _redis_url(name: str) -> str | None:
    """redis://[user:password@]host[:port][/db], rediss://..., unix:///path; unset means None."""
    raw: str = env.str(name, default="").strip()
    if not raw:
        return None
    # The value itself is not repeated: it may hold a password.
    problem = f"{name} must be a URL such as redis://127.0.0.1:6379/0 or unix:///path"
    try:
        parts = urlsplit(raw)
        _ = parts.port  # ValueError for a port that is not a number
    except ValueError:
        raise ImproperlyConfigured(problem) from None
    if parts.scheme in ("redis", "rediss"):
        db = parts.path.lstrip("/")
        if not parts.hostname or parts.path.count("/") > 1 or not (db == "" or db.isdigit()):
            raise ImproperlyConfigured(problem)
    elif parts.scheme == "unix":
        if not parts.path:
            raise ImproperlyConfigured(problem)
    else:
        raise ImproperlyConfigured(problem)
    return raw


# Where the counters live. The database handler (the default) shares them
# between every worker and app server on one database. With REDIS_URL they
# live in Redis instead (every app server names the same one), and a login
# attempt costs no database write.
REDIS_URL = _redis_url("REDIS_URL")
CACHES: dict[str, dict[str, object]] = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}
if REDIS_URL:
    CACHES["logins"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "gedweb",
    }
    AXES_HANDLER = "gedweb.logins.CacheHandler"
    AXES_CACHE = "logins"
else:
    AXES_HANDLER = "gedweb.logins.DatabaseHandler"
# --- end of Logins -----------------------------------------------------------

# Agent text rendered for the pages, once per text digest (memory/rendering.py),
# in Redis: one cache for every worker and app server, so a redaction's
# delete reaches every copy at once. Without REDIS_URL nothing is kept between
# requests: a copy in each worker's memory is one that a redaction run in
# another process could not reach. Each view then renders again, in time
# linear in the text, within the pages' 250 ms (docs/performance.md).
if REDIS_URL:
    CACHES["markdown"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "gedweb",
        "TIMEOUT": 24 * 3600,
    }
else:
    CACHES["markdown"] = {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}

# --- API rate limits (gedweb/throttling.py) ----------------------------------
# Per bearer token, in fixed windows shared by every worker and app server:
# counted in Redis with REDIS_URL, else in the database (memory.RateCounter).
# "N/second|minute|hour|day", or "off" where a gateway in front limits rates.
# The defaults leave room for an agent's bursts (a `memory list --all` of a
# large project, a CI job's imports) while one token cannot take a server's
# whole capacity: `make bench` measures about 380 appends/s on this machine.
def _rate(name: str, default: str) -> Rate | None:
    raw = env.str(name, default=default)
    try:
        return Rate.parse(raw)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name}={raw!r}: give N/second, N/minute, N/hour or N/day (N >= 1; DRF's "
            "5/min, 100/h, 1000/d too), or off"
        ) from None


GEDWEB_RATE_LIMITS = {
    "requests": _rate("GEDWEB_RATE_LIMIT", "3000/minute"),
    "writes": _rate("GEDWEB_WRITE_RATE_LIMIT", "600/minute"),
}
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["gedweb.throttling.TokenRateThrottle"]
if REDIS_URL:
    CACHES["rate_limits"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "gedweb:rate",
    }
# --- end of API rate limits ----------------------------------------------------

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# On every response. Pages use no inline script or style at all; the one
# exception, Swagger UI at /v1/docs, adds per-request nonces (gedweb/urls.py).
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}

if PRODUCTION:
    # TLS is terminated by the reverse proxy in front of gunicorn. There is
    # no SECURE_PROXY_SSL_HEADER: Django would believe X-Forwarded-Proto from
    # any client. gunicorn sets the scheme from it only for the proxies in
    # GEDWEB_TRUSTED_PROXIES (gunicorn.conf.py).
    SECURE_SSL_REDIRECT = True
    # A scraper on the app server's own network reaches gunicorn directly, in
    # plain HTTP; /metrics then takes only GEDWEB_METRICS_ALLOW's addresses,
    # never the admin token (gedweb/metrics.py).
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
    SECURE_HSTS_SECONDS = 31536000
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

# --- OAuth on /mcp ------------------------------------------------------------
# django-oauth-toolkit is the authorization server (gedweb/oauth/, docs/oauth.md).
# A token names one project and one of the three memory scopes; its scope string
# is "<memory scope> project:<id>" (gedweb/oauth/scopes.py), set by the consent
# page, never by the client.
OAUTH_ACCESS_TOKEN_SECONDS = env.int("GEDWEB_OAUTH_ACCESS_TOKEN_SECONDS", default=3600)
OAUTH_REFRESH_TOKEN_SECONDS = env.int("GEDWEB_OAUTH_REFRESH_TOKEN_SECONDS", default=30 * 86400)
if OAUTH_ACCESS_TOKEN_SECONDS < 1 or OAUTH_REFRESH_TOKEN_SECONDS < OAUTH_ACCESS_TOKEN_SECONDS:
    raise ImproperlyConfigured(
        "GEDWEB_OAUTH_ACCESS_TOKEN_SECONDS must be at least 1, and "
        "GEDWEB_OAUTH_REFRESH_TOKEN_SECONDS at least as long"
    )
# Requests per client address to the endpoints OAuth clients call without a
# token (registration, token, revocation): registration is open, so this is
# what bounds how fast anyone can add clients (gedweb/oauth/views.py).
OAUTH_RATE_LIMIT = _rate("GEDWEB_OAUTH_RATE_LIMIT", "60/minute")
# Tests only: a CA file whose certificates the client ID metadata document
# fetcher trusts, and with it permission to fetch from loopback addresses
# (gedweb/oauth/cimd.py). Unset, only public https hosts with publicly
# trusted certificates are fetched. Refused in production.
OAUTH_CIMD_LOOPBACK_CA: str | None = env.str("GEDWEB_OAUTH_CIMD_LOOPBACK_CA", default="") or None
if PRODUCTION and OAUTH_CIMD_LOOPBACK_CA:
    raise ImproperlyConfigured("GEDWEB_OAUTH_CIMD_LOOPBACK_CA is for tests; unset it in production")
OAUTH2_PROVIDER = {
    "SCOPES": {
        "memory:read": "read the project's memory, documents and work items",
        "memory:propose": "read, and propose memory entries for review",
        "memory:write": "read and write the project's memory and work items",
    },
    "DEFAULT_SCOPES": ["memory:read"],
    "OAUTH2_VALIDATOR_CLASS": "gedweb.oauth.validators.GedWebOAuth2Validator",
    "PKCE_REQUIRED": True,
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ACCESS_TOKEN_EXPIRE_SECONDS": OAUTH_ACCESS_TOKEN_SECONDS,
    "REFRESH_TOKEN_EXPIRE_SECONDS": OAUTH_REFRESH_TOKEN_SECONDS,
    "ROTATE_REFRESH_TOKEN": True,
    # A refresh token used twice revokes its whole family (RFC 9700 4.14.2).
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    # Every consent is asked for: a grant names a project the person picks.
    "REQUEST_APPROVAL_PROMPT": "force",
    # http only for loopback redirects (RFC 8252 7.3; gedweb/oauth/validators.py).
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https", "http"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none", "client_secret_basic", "client_secret_post",
    ],
    # RFC 9700's gates, all on: S256 only, no implicit or password grant,
    # bearer tokens only in the header, tokens stored as hashes.
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # MCP clients register themselves, without an account (RFC 7591 open
    # registration); a registered client can do nothing until a member consents.
    "DCR_ENABLED": True,
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "CIMD_ENABLED": True,
    "CIMD_METADATA_FETCHER": "gedweb.oauth.cimd.MetadataFetcher",
    "CIMD_FETCH_TIMEOUT_SECONDS": 5,
    "CIMD_MAX_DOCUMENT_SIZE": 16 * 1024,
    "OAUTH2_PROTECTED_RESOURCE_NAME": "GedWeb memory (MCP)",
}
SILENCED_SYSTEM_CHECKS = [
    # http redirect URIs: RFC 8252 loopback redirects of native clients need
    # them; GedWebOAuth2Validator takes http for 127.0.0.1 and [::1] only.
    "oauth2_provider.W008",
    # The RFC 9207 iss parameter: MCP clients compare it as a plain string
    # with the metadata's issuer, which they read back with a trailing slash
    # the request-derived issuer lacks; sent, it would fail every login.
    "oauth2_provider.W005",
]
# --- end of OAuth on /mcp -----------------------------------------------------

# --- Quotas ------------------------------------------------------------------
# Per-project storage quotas (memory/quotas.py, docs/api.md#quotas), in MiB of
# stored UTF-8 text plus 256 bytes per row. Defaults are far above what a
# real project stores (a busy project's memory is a few MiB) and low enough
# that one leaked token cannot fill the disk: work files are the largest
# kind (1,000,000 characters each, a new version per edit), skills the
# smallest. An operator raises one project's quota in the admin.


def _quota_mib(name: str, default: int) -> int:
    raw = env.str(name, default="").strip()
    if raw == "":
        return default
    # ASCII digits only: int() would also take "+5", "1_000" or other scripts' digits.
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ImproperlyConfigured(f"{name} must be a whole number of MiB, at least 1, not {raw!r}")
    return int(raw)


QUOTAS_MIB = {
    "entries": _quota_mib("GEDWEB_QUOTA_ENTRIES_MIB", 256),
    "documents": _quota_mib("GEDWEB_QUOTA_DOCUMENTS_MIB", 256),
    "work_files": _quota_mib("GEDWEB_QUOTA_WORK_FILES_MIB", 1024),
    "skills": _quota_mib("GEDWEB_QUOTA_SKILLS_MIB", 64),
}
# --- end of Quotas -----------------------------------------------------------
