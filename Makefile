# GedWeb: `make run` serves the site and API, `make test` runs the suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q

.PHONY: run test test-pure gates bench bench-ledger lint mutants check-python clean

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else "GedWeb needs Python >= 3.12 (.python-version pins one for pyenv); set PYTHON=python3.12")'

$(BIN)/python: | check-python
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev]'
	@touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput -v0
	$(BIN)/gunicorn --config gunicorn.conf.py gedweb.wsgi

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

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

# ruff, then the layer contracts in pyproject.toml ([tool.importlinter]).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check gedweb memory governance bench tests
	$(BIN)/lint-imports

# Mutation testing ([tool.mutmut] in pyproject.toml, docs/testing.md): every
# mutant of the pure rules must be killed by a test or listed there as equivalent.
mutants: $(VENV)/.installed-dev
	rm -rf mutants
	$(BIN)/mutmut run --max-children 2
	$(BIN)/mutmut results

bench: $(VENV)/.installed-dev
	$(BIN)/python bench/run.py $(BENCH_ARGS)

# What the trust ledger costs a write, in process (docs/performance.md); SQLite,
# plus PostgreSQL with LEDGER_ARGS="--database-url postgres://...@127.0.0.1:5432/NAME".
bench-ledger: $(VENV)/.installed-dev
	$(BIN)/python bench/ledger.py $(LEDGER_ARGS)

clean:
	rm -rf $(VENV) .data/test-gedweb-*.sqlite3* .pytest_cache mutants
