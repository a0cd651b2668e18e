"""ASGI entry point, for deployments that prefer an ASGI server."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")

application = get_asgi_application()
