# GedWeb: `make run` serves the site and API, `make test` runs the suite.
PYTHON ?= python3
# Installs come from the hash-pinned lock files in requirements/ (written by
# `make lock`), never from a fresh resolve: every machine gets the same versions.
# DJANGO=6.0 runs the dev targets in .venv-django6.0, built from its own lock:
# CI runs the suite on both supported minors (gedweb/db leans on private ORM APIs).
DJANGO ?= 6.1
ifeq ($(DJANGO),6.1)
VENV     := .venv
DEV_LOCK := requirements/dev.txt
else
VENV     := .venv-django$(DJANGO)
DEV_LOCK := requirements/dev-django$(DJANGO).txt
endif
RUN_LOCK := requirements/base.txt
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: run test test-pure gates bench bench-markdown bench-recall bench-million bench-overhead bench-ledger bench-metrics lint lock mutants mutants-services mutants-holes check-python clean

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "GedWeb needs Python >= 3.12 (.python-version pins one for pyenv); set PYTHON=python3.12")'

$(BIN)/python: | check-python
	$(PYTHON) -m venv $(VENV)

# The lock first, every file checked against its hash; then GedWeb itself,
# editable and without dependencies, so nothing unlocked gets in.
# A changed lock (or pyproject.toml) re-installs on the next target.
$(VENV)/.installed: $(RUN_LOCK) pyproject.toml | $(BIN)/python
	$(PIP) install --require-hashes --no-deps -r $(RUN_LOCK)
	$(PIP) install --no-deps -e .
	@touch $@

$(VENV)/.installed-dev: $(DEV_LOCK) pyproject.toml | $(BIN)/python
	$(PIP) install --require-hashes --no-deps -r $(DEV_LOCK)
	$(PIP) install --no-deps -e .
	@touch $@ $(VENV)/.installed

# axe-core, which the browser tests inject into every page (tests/pages/test_layout.py),
# exactly as package-lock.json pins it; no install scripts run.
node_modules/.installed: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund
	@touch $@

# Re-resolve the lock files from pyproject.toml, keeping every pin that still
# fits; LOCK_ARGS=--upgrade (or --upgrade-package NAME) moves versions on purpose.
# The locks are complete (every dependency pinned), so they install with
# --no-deps, which lets them leave out what GedWeb never runs: tokenizers'
# huggingface-hub (with hf-xet and fsspec), which only its from_pretrained
# uses to download models. The recall model ships in a package and is read
# from the disk (gedweb/embedding.py); without the hub client nothing can
# fetch one, and the install is 20 MB smaller.
LOCK_COMPILE = $(BIN)/uv pip compile --quiet --universal --python-version 3.12 \
	--generate-hashes --no-emit-package huggingface-hub --no-emit-package hf-xet \
	--no-emit-package fsspec pyproject.toml $(LOCK_ARGS)
lock: $(VENV)/.installed-dev
	$(LOCK_COMPILE) -o requirements/base.txt
	$(LOCK_COMPILE) --extra dev -o requirements/dev.txt
	$(LOCK_COMPILE) --extra dev --constraint requirements/django6.0.in \
	  -o requirements/dev-django6.0.txt

run: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/gunicorn --config gunicorn.conf.py gedweb.wsgi

# pytest-xdist: one worker process per core of CI's machine, each on its own
# test database; a test file stays on one worker, so the servers and browsers
# of module-scoped fixtures start once. PYTEST_WORKERS=0 runs in this process.
PYTEST_WORKERS ?= 2
test: $(VENV)/.installed-dev node_modules/.installed
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The pure lib's and the checkout engine's tests with Django absent: pytest-django
# off, and each test fails if Django was imported (tests/django_absent.py).
test-pure: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -p no:django tests/lib tests/checkout $(PYTEST_ARGS)

# Security gates, each failing the build on its own finding IDs (docs/security.md).
# check --deploy runs with production settings and throwaway secrets;
# .ci/pip_audit_gate.py never passes an audit it could not run.
SECRET = $$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(48))')
gates: $(VENV)/.installed-dev
	@echo "== manage.py check --deploy --fail-level WARNING (production settings)"
	GEDWEB_PRODUCTION=true DJANGO_SECRET_KEY="$(SECRET)" GEDWEB_SIGNING_KEY="$(SECRET)" \
	  GEDWEB_ADMIN_TOKEN="$(SECRET)" \
	  GEDWEB_MEMORY_WRITE_TOKEN="$(SECRET)" DJANGO_ALLOWED_HOSTS=gedweb.example.org \
	  DATABASE_URL=sqlite:///./.data/gates.sqlite3 \
	  $(BIN)/python manage.py check --deploy --fail-level WARNING
	@echo "== bandit -ll (medium and high severity)"
	$(BIN)/bandit -q -r gedweb memory governance -ll
	@echo "== pip-audit (installed environment)"
	$(BIN)/python .ci/pip_audit_gate.py

# ruff, the layer contracts ([tool.importlinter]) and mypy strict ([tool.mypy]).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check gedweb memory governance bench tests
	$(BIN)/lint-imports
	$(BIN)/mypy

# Mutation testing ([tool.mutmut] in pyproject.toml, docs/testing.md): every
# mutant of the pure rules must be killed by a test or listed there as equivalent.
mutants: $(VENV)/.installed-dev
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results

# The services' mutants against the apps' Django tests (tests/mutants.py).
mutants-services: $(VENV)/.installed-dev
	rm -rf mutants
	$(BIN)/python tests/mutants.py services run --max-children 2
	$(BIN)/python tests/mutants.py services results

# The code where issue 34 found holes, one pass per module (docs/testing.md,
# "What `make mutants-holes` runs"), smallest first; each pass starts from a
# clean mutants/ and prints its survivors. HOLES names a subset.
HOLES ?= throttling templatetags client gedpi_import memory_api governance_api
mutants-holes: $(VENV)/.installed-dev
	set -e; for pass in $(HOLES); do \
		rm -rf mutants; \
		$(BIN)/python tests/mutants.py $$pass run --max-children 2; \
		$(BIN)/python tests/mutants.py $$pass results; \
	done

# docs/performance.md: growth to 100,000 entries (run.py, SQLite unless
# BENCH_ARGS names a database), the secret scan, the metrics' cost, GedWeb
# against the Django floor and its tails on both databases (overhead.py),
# and two app servers on one PostgreSQL (servers.py). About 8-10 minutes (604 s
# on 2026-12-06, about 500 s on 2026-12-07); MILLION=1 adds the million-entry run (bench-million, below).
BENCH_PG = postgres://postgres@127.0.0.1:5432
bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py $(BENCH_ARGS)
	$(BIN)/python bench/secret_scan.py
	$(BIN)/python bench/markdown_pages.py
	$(BIN)/python bench/bounded_inputs.py
	$(BIN)/python bench/metrics.py $(METRICS_ARGS)
	$(BIN)/python bench/overhead.py $(OVERHEAD_ARGS)
	$(BIN)/python bench/overhead.py --database-url $(BENCH_PG)/gedweb_overhead $(OVERHEAD_ARGS)
	$(BIN)/python bench/servers.py --database-url $(BENCH_PG)/gedweb_servers $(SERVERS_ARGS)
	$(if $(MILLION),$(BIN)/python bench/million.py $(MILLION_ARGS))

# Recall's quality (docs/recall.md): every evaluation set of bench/recall/sets/
# in a fresh project, indexed by the real model, every query through GET
# /recall in each mode: recall@5, recall@10 and MRR per set and query type,
# with latency, on SQLite then PostgreSQL; about 2 minutes.
# RECALL_ARGS="--write" keeps bench/results/recall-*.json; "--weights 0.3,0.5,0.7"
# sweeps the hybrid blend.
bench-recall: $(VENV)/.installed-dev
	$(BIN)/python bench/recall/evaluate.py $(RECALL_ARGS)
	$(BIN)/python bench/recall/evaluate.py --database-url $(BENCH_PG)/gedweb_recall $(RECALL_ARGS)

# A million entries among 10,000 projects (docs/performance.md, "A million
# entries"): latency against an empty project, and the peak memory of the
# memory commands and the CLI over the whole record; 9-15 minutes on
# SQLite. MILLION_ARGS="--entries 100000" for a shorter run,
# "--database-url postgres://...@127.0.0.1:5432/gedweb_million" for PostgreSQL.
# Then recall in a project of a million entries (bench/recall/costs.py: latency
# of each mode, the matrix's memory; about 40 minutes on SQLite):
# RECALL_MILLION_ARGS="--database-url postgres://.../gedweb_recall_million" for
# PostgreSQL, "--json bench/results/recall-million-sqlite.json" to keep it.
bench-million: $(VENV)/.installed-dev
	$(BIN)/python bench/million.py $(MILLION_ARGS)
	$(BIN)/python bench/recall/costs.py --sizes 1000000 --skip-lag --skip-install $(RECALL_MILLION_ARGS)

# What the request metrics cost an append: two gunicorns, with and without
# the middleware, loaded at once in 24 rounds (docs/performance.md); about
# 3 minutes. METRICS_ARGS="--database-url postgres://...@127.0.0.1:5432/NAME".
bench-metrics: $(VENV)/.installed-dev
	$(BIN)/python bench/metrics.py $(METRICS_ARGS)

# GedWeb against the Django floor and the raw floor, and its tails under
# 16 clients (bench/overhead.py), on SQLite; about 1.5 minutes.
bench-overhead: $(VENV)/.installed-dev
	$(BIN)/python bench/overhead.py $(OVERHEAD_ARGS)

# Agent text on the pages (bench/markdown_pages.py): the renderer and the pages
# with the worst text of each kind at its size limit, against the 250 ms
# target (docs/performance.md, "Markdown on the pages"); about 40 seconds.
bench-markdown: $(VENV)/.installed-dev
	$(BIN)/python bench/markdown_pages.py $(MARKDOWN_ARGS)

# What the trust ledger costs a write, in process (docs/performance.md); SQLite,
# plus PostgreSQL with LEDGER_ARGS="--database-url postgres://...@127.0.0.1:5432/NAME".
bench-ledger: $(VENV)/.installed-dev
	$(BIN)/python bench/ledger.py $(LEDGER_ARGS)

clean:
	rm -rf .venv .venv-django* .data/test-gedweb-*.sqlite3* .pytest_cache mutants
