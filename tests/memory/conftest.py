"""Memory app tests: the Django suite's shared fixtures (tests/django_fixtures.py) apply here."""

from tests.django_fixtures import *  # noqa: F403
