"""Tests of the pure rules (gedweb.lib): no Django here (`make test-pure` checks it)."""

from tests.django_absent import django_stays_absent  # noqa: F401  (autouse)
