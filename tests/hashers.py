"""The tests' password hasher: PBKDF2 with one iteration instead of Django's million.

The iteration count is part of each stored hash, so a manage.py or gunicorn
child, which runs with the real settings, still checks a password that a
test stored in process (tests/test_logins.py logs in through one), and the
suite checks what a child stored with the real count.
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneIterationPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
