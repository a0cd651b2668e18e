from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_migrate


def _ensure_demo_project(sender: AppConfig, **kwargs: Any) -> None:
    # After migrate, so `make run` always finds the demo project ready and a
    # request never has to create it.
    if settings.DEMO_PROJECT and kwargs.get("using", "default") == "default":
        from memory.services import demo_project_ensure

        demo_project_ensure()


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Project memory"

    def ready(self) -> None:
        post_migrate.connect(_ensure_demo_project, sender=self)
        from memory.api import schema  # noqa: F401  registers the OpenAPI auth scheme
