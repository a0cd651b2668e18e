"""gunicorn's entry point: ``gunicorn --config gunicorn.conf.py django_floor.wsgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_floor.settings")
application = get_wsgi_application()
