"""The checkout engine: what touches a GedPi checkout on disk.

Contained, symlink-refusing, durable file access (safefs), the legacy
checkpoint import (checkpoints) and the durable-memory v3 migration (v3):
file I/O, fcntl locks, process checks and `git` subprocesses. No Django: the
management commands and services call it. The rules it applies that need no
I/O (GedPi's store rules, the placeholder catalogue) live in gedweb.lib.
"""
