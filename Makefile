# hostsite: `make run` starts the platform, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Stamps record which requirements are installed, so a second run installs nothing. `make run`
# installs the runtime requirements only; the test targets add the test and lint tools.
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
# Tests and the type checker load settings with DEBUG off, as production does; the key is a
# throwaway unless one is given. Bytecode is cached (in the ignored __pycache__/) even where the
# environment sets PYTHONDONTWRITEBYTECODE: each xdist worker otherwise recompiles and
# assert-rewrites every test module at collection (tests/repos: 18.0 CPU-s cold vs 6.2 cached),
# and every Django child process (servers, workers, manage.py) recompiles the site's modules.
TEST_ENV := SECRET_KEY="$${SECRET_KEY:-insecure-test-only-key}" PYTHONDONTWRITEBYTECODE=
# The suite runs in TEST_WORKERS processes (pytest-xdist), each taking whole test files
# (--dist loadfile: a module's fixtures are built once, in one process). Tests spend most of
# their time waiting on git, servers and workers, so more workers than cores pay. TEST_WORKERS=0
# runs it in this one process (for -x, --pdb or reading one test's output in order).
TEST_WORKERS ?= 4
XDIST := -n $(TEST_WORKERS) --dist loadfile
# The suite runs on PostgreSQL + Redis when both answer on localhost and DATABASE_URL and
# CELERY_BROKER_URL are not set (set them, even empty, to choose); it prints one line saying
# which backends it uses and why (tests/support/backends.py).
ON_BACKENDS := $(PY) -m tests.support.backends
# `make test-repeat` runs the live subset this many times.
N ?= 5

.PHONY: run test test-fast test-repeat pytest check lint fmt types venv clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(VENV)/bin/python
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@ $(RUN_STAMP)

venv: $(DEV_STAMP)

run: $(RUN_STAMP)
	exec $(PY) -m hostsite.run

# Format, lint, types and the layers of docs/architecture.md (import-linter's contracts in
# pyproject.toml) first: each fails fast, before the suite's minutes.
check: $(DEV_STAMP)
	$(PY) -m ruff format --check .
	$(PY) -m ruff check .
	$(TEST_ENV) $(PY) -m mypy
	$(VENV)/bin/lint-imports

test: check
	$(TEST_ENV) exec $(ON_BACKENDS) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The same checks and the suite without the live web server and Celery worker processes.
test-fast: check
	$(TEST_ENV) exec $(ON_BACKENDS) $(PY) -m pytest $(XDIST) -m "not live" $(PYTEST_ARGS)

# The live subset (marker `live`) N times, every run to its end; prints each run's counts and
# then every test that failed in any run: a flaky test shows as one failing in some runs.
test-repeat: $(DEV_STAMP)
	$(TEST_ENV) exec $(ON_BACKENDS) $(PY) -m tests.support.repeat --runs $(N) -- $(XDIST) $(PYTEST_ARGS)

# The suite alone (CI's run against a second git): `make pytest PYTEST_ARGS="tests/bundles"`.
pytest: $(DEV_STAMP)
	$(TEST_ENV) exec $(ON_BACKENDS) $(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

types: $(DEV_STAMP)
	$(TEST_ENV) $(PY) -m mypy

lint: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

fmt: $(DEV_STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache .import_linter_cache
