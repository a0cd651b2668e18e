"""gedweb.settings without the request metrics middleware: the B side of bench/metrics.py.

Nothing else differs, so the two servers' throughput differs by what the
middleware costs a request. Benchmark only; no deployment uses it.
"""

from gedweb.settings import *  # noqa: F403
from gedweb.settings import MIDDLEWARE

MIDDLEWARE = [name for name in MIDDLEWARE if name != "gedweb.metrics.RequestMetricsMiddleware"]
