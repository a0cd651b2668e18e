"""Database backend tests: the shared Django fixtures (tests/django_fixtures.py) apply."""

from tests.django_fixtures import *  # noqa: F403
