"""Database backends: SQLite with a writer queue (gedweb.db.sqlite3)."""
