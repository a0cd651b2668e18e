"""Tests of the checkout engine (gedweb.checkout): no Django here (`make test-pure`)."""

from tests.django_absent import django_stays_absent  # noqa: F401  (autouse)
