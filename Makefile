# hostsite: `make run` starts the platform, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The stamp records which requirements are installed, so a second run installs nothing.
STAMP := $(VENV)/.installed

.PHONY: run test lint fmt venv clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	exec $(PY) -m hostsite.run

# Tests run with DEBUG off, as production does; the key is a throwaway unless one is given.
test: $(STAMP)
	$(PY) -m ruff check .
	SECRET_KEY="$${SECRET_KEY:-insecure-test-only-key}" exec $(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

fmt: $(STAMP)
	$(PY) -m ruff check --fix .
	$(PY) -m ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
