"""WSGI entry point; `make run` serves it with gunicorn.

Django answers every path but ``/mcp``, the remote MCP endpoint, whose SDK
transport is ASGI (gedweb/remote_mcp.py); its tools call back into this same
Django application in process.
"""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")

django_application = get_wsgi_application()

from gedweb.remote_mcp import with_remote_mcp  # noqa: E402  (after Django is set up)

application = with_remote_mcp(django_application, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
