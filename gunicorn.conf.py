"""gunicorn settings for `make run`; HOST, PORT and WEB_CONCURRENCY override them."""

import os

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8787')}"
# Threads share one process's connections; processes add CPU parallelism.
# SQLite serialises writers itself (WAL + BEGIN IMMEDIATE + busy timeout).
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
timeout = 60
graceful_timeout = 20
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
# gunicorn's default logs the whole request line; the path without its query
# string keeps a token someone put in the URL out of the log.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'
errorlog = "-"
# Trust X-Forwarded-* only from the local reverse proxy.
forwarded_allow_ips = "127.0.0.1"
