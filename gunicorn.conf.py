"""gunicorn settings for `make run`; HOST, PORT, WEB_CONCURRENCY, GUNICORN_THREADS override them."""

import os
from pathlib import Path

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8787')}"
# A request spends most of its time on the CPU in Python, so parallelism
# comes from processes: threads of one process contend for the GIL, which
# cost a third of the append throughput in `make bench` (2 x 8 threads:
# 0.25 of the floor; 5 x 1: 0.31-0.37; docs/performance.md). gunicorn's
# advice of 2 x CPUs + 1 workers keeps a core busy while another worker
# waits on the database or an fsync. Writers queue for the SQLite writer
# lock across processes (gedweb/db/sqlite3/base.py).
workers = int(os.environ.get("WEB_CONCURRENCY") or 2 * len(os.sched_getaffinity(0)) + 1)
# gthread even with one thread: it keeps connections that have sent nothing
# yet (a browser's preconnect) in its poller instead of tying the worker up
# with them. Its balanced form (gedweb/server_worker.py) accepts a connection
# only while a thread is free, so a request waits in the kernel's one accept
# queue for the first free worker instead of behind a busy one.
worker_class = "gedweb.server_worker.BalancedThreadWorker"
threads = int(os.environ.get("GUNICORN_THREADS") or 1)
# No keep-alive: each request comes back to that one queue. A worker keeps
# the connections it accepted, so with keep-alive 16 clients stayed where
# they first landed, 10 of them on one worker while others idled: p99 under
# load was 5-9 times the p50, 2 times without (docs/performance.md, "Tails").
# A connection costs less than that wait; behind a reverse proxy, the
# proxy's keep-alive to its clients is unaffected.
keepalive = 0
timeout = 60
graceful_timeout = 20
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-") or None
# gunicorn's default logs the whole request line; the path without its query
# string keeps a token someone put in the URL out of the log. The last field,
# <pid>, names the worker that answered.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(p)s'
errorlog = "-"
# gunicorn's maximum (its default is 4094). The longest request line the API
# accepts, a memory search with `q` at its 500-character maximum in 4-byte
# characters (12 bytes each percent-encoded) and every other parameter at
# its own, is 7,876 bytes (memory/api/serializers.py), so no valid request
# meets gunicorn's HTML 414; a longer `q` is the API's own 400.
limit_request_line = 8190
# X-Forwarded-Proto makes a request count as HTTPS only when it comes from a
# reverse proxy the operator names (GEDWEB_TRUSTED_PROXIES, comma-separated
# addresses; none by default), so a client cannot make a plain request look
# secure. gedweb/settings.py checks the same variable.
forwarded_allow_ips = os.environ.get("GEDWEB_TRUSTED_PROXIES", "").replace(" ", "")

# gunicorn's control socket (gunicornc) lives in the installation's data
# directory, not the shared ~/.gunicorn/gunicorn.ctl, where two servers on
# one account (two checkouts, the test suite) would take over each other's.
_data_dir = Path(os.environ.get("GEDWEB_DATA_DIR") or "./.data")
_data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
control_socket = str(_data_dir.resolve() / "gunicorn.ctl")

# Prometheus metrics (gedweb/metrics.py): each worker writes its counters and
# histograms to files in this directory and /metrics adds up every worker's
# (prometheus_client's multiprocess mode). Set here, in the master, so that
# every worker inherits it before it imports prometheus_client, which picks
# the mode once, at import. An operator's own PROMETHEUS_MULTIPROC_DIR wins.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(_data_dir.resolve() / "prometheus"))


def on_starting(server):
    """Empty the metrics directory: an earlier run's files would be added to this run's figures.

    Only prometheus_client's own files (``*.db``) are removed, in case the
    variable names a directory that holds anything else.
    """
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for leftover in directory.glob("*.db"):
        leftover.unlink(missing_ok=True)


def child_exit(server, worker):
    """A worker ended: its live gauges go; its counters stay in the totals, as Prometheus wants."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


# The recall indexer (docs/recall.md): `manage.py memory index --follow`,
# started beside the workers so that `make run` serves recall by meaning with
# nothing else to start. It runs under gedweb.supervise, which restarts it if
# it dies and stops it when the server stops (the master's own threads cannot
# start processes safely while it forks workers: gedweb/supervise.py says
# why). Started here, in the master's main thread, before any worker exists.
# The indexer nices itself, so embedding never takes a worker's CPU first.
# Several servers on one database each start one, and the database's lease
# lets exactly one index at a time (the others wait as standbys).
# GEDWEB_RECALL_INDEXER=off when the operator runs it as a service of its own.
_indexer = {"process": None}


def _indexer_wanted():
    return (os.environ.get("GEDWEB_RECALL_INDEXER", "auto").strip() != "off"
            and os.environ.get("GEDWEB_RECALL_MODEL", "minilm").strip() != "off")


def when_ready(server):
    _start_indexer(server)
    _print_banner(server)


def _print_banner(server):
    """Where things are and what is on (gedweb/banner.py), once, when the workers are ready.

    Reading the settings here loads them in the master; it never stops the
    server: a banner that cannot be made is one log line.
    """
    import sys

    try:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gedweb.settings")
        from gedweb.banner import startup_banner

        print(startup_banner(server.cfg.bind[0]), file=sys.stderr, flush=True)
    except Exception as exc:
        server.log.warning("no start banner: %s", exc)


def _start_indexer(server):
    if not _indexer_wanted():
        server.log.info("recall indexer: not started (GEDWEB_RECALL_INDEXER or MODEL is off)")
        return
    import subprocess
    import sys

    manage = str(Path(__file__).resolve().parent / "manage.py")
    _indexer["process"] = subprocess.Popen([
        sys.executable, "-m", "gedweb.supervise", "--name", "recall indexer", "--",
        sys.executable, manage, "memory", "index", "--follow", "--exit-with-parent",
    ])
    server.log.info("recall indexer: started (manage.py memory index --follow)")


def on_exit(server):
    process = _indexer["process"]
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except Exception:
            process.kill()
