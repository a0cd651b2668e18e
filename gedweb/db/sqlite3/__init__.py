"""SQLite for GedWeb: Django's backend plus a fair writer queue; see base.py."""
