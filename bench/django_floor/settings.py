"""Settings of the Django floor: a project as ``django-admin startproject`` makes it.

The apps and middleware are startproject's (without the admin and static
files, which serve no API request), so the floor pays what any Django
project pays per request; the database and DRF settings are GedWeb's.
"""

from __future__ import annotations

import os

import environ

SECRET_KEY = os.environ["FLOOR_SECRET_KEY"]
# GedWeb's mode as benchmarked (bench/overhead.py sets it): `make run`
# without GEDWEB_PRODUCTION runs Django with DEBUG on, which records every
# SQL statement a request makes; the floor pays for its own statements alike.
DEBUG = os.environ.get("FLOOR_DEBUG", "false") == "true"
ALLOWED_HOSTS = ["127.0.0.1"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "rest_framework",
    "django_floor",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "django_floor.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

_db = environ.Env.db_url_config(os.environ["FLOOR_DATABASE_URL"])
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # GedWeb's SQLite settings (gedweb/settings.py), through Django's own backend.
    _db["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL;PRAGMA synchronous=FULL;PRAGMA foreign_keys=ON",
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
_db["CONN_MAX_AGE"] = 60
_db["CONN_HEALTH_CHECKS"] = True
DATABASES = {"default": _db}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["django_floor.authentication.BearerDigestAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
}
