"""The migration command's tests: the shared Django fixtures apply here."""

from tests.django_fixtures import *  # noqa: F403
