"""Development's demo project: its id, name and documented token (README.md).

Constants only, so the start banner (gedweb/banner.py) can name them in
gunicorn's master, where Django's apps are not loaded.
"""

DEMO_PROJECT_ID = "demo"
DEMO_PROJECT_NAME = "Demo project"
DEMO_TOKEN = "demo-local-token"  # nosec B105: the documented development token, never production
DEMO_TOKEN_NAME = "demo"
