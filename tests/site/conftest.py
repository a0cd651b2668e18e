"""Site-wide tests (settings, admin, logins, OpenAPI, query counts): Django fixtures apply."""

from tests.django_fixtures import *  # noqa: F403
