"""ASGI entry point, for deployments that prefer an ASGI server.

``/mcp`` goes to the remote MCP endpoint (gedweb/remote_mcp.py) directly, as
the ASGI application it is; its tools reach the REST API in process through
Django's WSGI handler, as under `make run`. Every other path is Django's.
"""

import os
from typing import Any

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")

django_application = get_asgi_application()

from gedweb.remote_mcp import MCP_PATH, RemoteMCP  # noqa: E402  (after Django is set up)

remote_mcp = RemoteMCP(get_wsgi_application(), settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    path = scope.get("path", "")
    if scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
        await remote_mcp(scope, receive, send)
    else:
        await django_application(scope, receive, send)
