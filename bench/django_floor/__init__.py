"""The Django floor: a minimal Django + DRF project that appends as GedWeb must.

None of GedWeb's code runs in it (bench/floor_rules.py is standard library
only). One DRF ``APIView`` answers ``POST /v1/projects/<id>/memory``:

- authenticates the bearer token by its SHA-256 in one query (the token row
  brings its project, as GedWeb's does);
- validates the body by the contract's rules (bench/floor_rules.py, the same
  function the raw floor uses);
- in one transaction takes the project's write turn (SQLite: Django's
  ``transaction_mode="IMMEDIATE"``, so ``BEGIN IMMEDIATE``; PostgreSQL:
  ``SELECT ... FOR NO KEY UPDATE`` on the project row), reads the chain
  head, computes the same SHA-256 link over the same chained fields
  (chain format 2), inserts the row through the ORM and commits;
- after the commit appends the entry's block to the project's mirror file
  under an exclusive ``flock`` and fsyncs it;
- answers 201 with the entry as JSON.

It is served by the same ``gunicorn --config gunicorn.conf.py`` as
``make run`` (bench/overhead.py starts it), with the same database settings
as GedWeb's: WAL, ``synchronous=FULL``, 30 s timeout and connections kept for
60 s. Environment: FLOOR_DATABASE_URL (``sqlite:///path`` or
``postgres://...``), FLOOR_MIRROR_ROOT, FLOOR_SECRET_KEY.
"""
