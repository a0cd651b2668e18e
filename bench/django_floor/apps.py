from django.apps import AppConfig


class DjangoFloorConfig(AppConfig):
    name = "django_floor"
    default_auto_field = "django.db.models.BigAutoField"
