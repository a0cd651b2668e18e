"""One installation's secrets and data at rest: read by settings, before Django is set up.

- **One secret key per installation.** Without ``DJANGO_SECRET_KEY``,
  development keeps a key in ``<data directory>/secret_key``: made once, by
  whichever process starts first, and read by every gunicorn worker and
  every ``manage.py`` after it. A key per process would make a session
  cookie valid only on the worker that issued it, and chain checkpoints
  uncheckable by any other process.
- **A signing key of its own** for chain checkpoints, apart from the secret
  key (``<data directory>/signing_key`` in development, ``GEDWEB_SIGNING_KEY``
  in production): rotating the secret key, say after a session leak, leaves
  every checkpoint verifiable, and the signing key rotates on its own.
- **Private data.** The data directory is 0700 and the key files 0600: the
  database beside them holds session keys and every project's memory.
- **Production refuses weak secrets** at start, naming the variable: a
  secret key that Django's own deploy check calls weak (``security.W009``,
  ``W025`` for fallbacks), and a token that zxcvbn estimates guessable
  (``token_problem``; docs/configuration.md states the rule).

The standard library, Django's exception and its deploy check's rule, and
zxcvbn's strength estimate.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

# Private, so django-stubs leave it out; it is the deploy check's own rule.
from django.core.checks.security.base import (  # type: ignore[attr-defined]  # unstubbed
    _check_secret_key as _django_accepts_secret_key,
)
from django.core.exceptions import ImproperlyConfigured
from zxcvbn import zxcvbn

from gedweb.checkout import safefs

SECRET_KEY_FILE = "secret_key"
SIGNING_KEY_FILE = "signing_key"
PRIVATE_DIRECTORY_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

# The token rule, for GEDWEB_ADMIN_TOKEN and GEDWEB_MEMORY_WRITE_TOKEN in
# production: at least 32 characters, and at least 10^25 guesses (about 83
# bits) by zxcvbn's estimate, which sees repeats, sequences, keyboard walks,
# dates and dictionary words that a length or variety rule lets through
# ("passwordpasswordpasswordpassword123" estimates at 10^4). Random tokens
# pass with room to spare: over 1,500 draws each, the weakest estimate was
# 10^27.6 for secrets.token_hex(16) and 10^30.4 for token_urlsafe(24).
TOKEN_MIN_LENGTH = 32
TOKEN_MIN_GUESSES_LOG10 = 25
# README.md's example admin token: fine on a laptop, never in production.
EXAMPLE_TOKENS = frozenset({"change-me-admin-token-0123456789"})


def private_directory(path: Path) -> Path:
    """Create ``path`` (and its parents) as needed and make it 0700 if it is ours.

    A directory shared by everyone (world-writable, such as /tmp) is
    refused rather than narrowed; one of another owner is left as its owner
    set it, and files inside are still created 0600.
    """
    path.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise ImproperlyConfigured(f"{path} must be a directory")
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IWOTH | stat.S_ISVTX):
        raise ImproperlyConfigured(
            f"{path} is a shared directory (mode {mode:o}); give GedWeb a directory of its own"
        )
    if info.st_uid == os.geteuid() and mode & 0o077:
        os.chmod(path, mode & ~0o077)
    return path


def make_private(path: Path) -> None:
    """Take group and other permissions off an existing file of ours (0644 -> 0600)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o077)


def installation_key(data_dir: Path, filename: str, fallbacks_variable: str) -> str:
    """The key in ``data_dir/<filename>``, made on first use; the same for every process.

    The first process writes a fresh key to a temporary file and hard-links
    it into place (create-only), so concurrent starts agree on one key and
    nobody ever reads a half-written one.
    """
    directory = private_directory(data_dir)
    path = directory / filename
    try:
        data = safefs.read_bytes(directory, filename)
        if data is None:
            fresh = secrets.token_urlsafe(64).encode() + b"\n"
            safefs.publish_exclusive(directory, filename, fresh, mode=PRIVATE_FILE_MODE)
            data = safefs.read_bytes(directory, filename)
        make_private(path)
    except safefs.UnsafePath as exc:
        raise ImproperlyConfigured(f"{path} must be a regular file: {exc}") from None
    key = (data or b"").decode("ascii", errors="replace").strip()
    if not _django_accepts_secret_key(key) or not key.isprintable():
        raise ImproperlyConfigured(
            f"{path} does not hold a usable key; remove it to have a new one made "
            f"(what was signed with the old key stops verifying unless it is kept in "
            f"{fallbacks_variable})"
        )
    return key


def installation_secret_key(data_dir: Path) -> str:
    """Django's SECRET_KEY in development: sessions, CSRF, password resets."""
    return installation_key(data_dir, SECRET_KEY_FILE, "DJANGO_SECRET_KEY_FALLBACKS")


def installation_signing_key(data_dir: Path) -> str:
    """The chain checkpoints' signing key in development, apart from SECRET_KEY."""
    return installation_key(data_dir, SIGNING_KEY_FILE, "GEDWEB_SIGNING_KEY_FALLBACKS")


def secret_key_problem(name: str, value: str) -> str | None:
    """Why production refuses this SECRET_KEY (or fallback), as Django's deploy check does."""
    if _django_accepts_secret_key(value):
        return None
    return (
        f"{name} is weak (Django's security.W009): use at least 50 characters, 5 of them "
        "different, not starting with 'django-insecure-'; for example "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(64))'"
    )


def token_problem(name: str, value: str) -> str | None:
    """Why production refuses this bearer token: too short, the README's, or guessable."""
    if len(value) < TOKEN_MIN_LENGTH:
        return f"{name} must be at least {TOKEN_MIN_LENGTH} characters in production"
    if value in EXAMPLE_TOKENS:
        return f"{name} is the example from the README; make a random one"
    guesses_log10 = zxcvbn(value)["guesses_log10"]
    if guesses_log10 < TOKEN_MIN_GUESSES_LOG10:
        return (
            f"{name} is guessable: about 10^{guesses_log10:.0f} guesses by zxcvbn's estimate "
            f"(repeats, sequences or words), fewer than the 10^{TOKEN_MIN_GUESSES_LOG10} "
            "required; make a random one, for example "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return None
