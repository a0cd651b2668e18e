"""Create the Django floor's tables and projects: ``python -m django_floor.provision N``.

Prints one JSON object, project id -> bearer token. Run by bench/overhead.py
with the floor's environment (FLOOR_DATABASE_URL and the rest).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_floor.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from django_floor.models import Project, Token  # noqa: E402


def main(count: int) -> None:
    call_command("migrate", run_syncdb=True, verbosity=0)
    tokens = {}
    for index in range(count):
        project = Project.objects.create(id=f"floor-{index}")
        raw = secrets.token_urlsafe(32)
        Token.objects.create(digest=hashlib.sha256(raw.encode()).hexdigest(), name="bench",
                             project=project)
        tokens[project.id] = raw
    print(json.dumps(tokens))


if __name__ == "__main__":
    main(int(sys.argv[1]))
