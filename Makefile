# Two commands on a fresh machine: `make demo` and `make test`. Each creates or refreshes
# .venv itself from pyproject.toml; nothing else is installed by hand.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP_FLAGS := --quiet --disable-pip-version-check

.PHONY: demo localstack node test check lint typecheck suite browser screenshots bench test-docker docs deps-bounds dist clean

# LocalStack (the second reference interpreter, tests only) in a venv of its own: it needs
# Python >= 3.12 and pins that would clash with ours. The first interpreter found that is
# >= 3.12 (PATH, then pyenv's versions); set LOCALSTACK_PYTHON to choose another.
LOCALSTACK_VENV := .venv-localstack
LOCALSTACK_REQUIREMENTS := tests/localstack/requirements.txt
LOCALSTACK_PYTHON ?= $(shell for p in python3.13 python3.12 $(HOME)/.pyenv/versions/3.13*/bin/python3 $(HOME)/.pyenv/versions/3.12*/bin/python3; do $$p -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && { echo $$p; break; }; done)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install $(PIP_FLAGS) --upgrade pip==25.3

# Runtime only: enough for the demo.
$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e .
	touch $@

# Everything the tests, the CDK app and the benchmarks need.
$(VENV)/.dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install $(PIP_FLAGS) -e '.[dev]'
	touch $@ $(VENV)/.runtime

# Without a Python >= 3.12 the LocalStack tests skip (one line), or fail under CI=true.
$(LOCALSTACK_VENV)/.installed: $(LOCALSTACK_REQUIREMENTS)
	@if [ -z "$(LOCALSTACK_PYTHON)" ]; then \
	  echo "LocalStack needs Python >= 3.12: none found (set LOCALSTACK_PYTHON); its tests will skip"; \
	  if [ "$$CI" = true ]; then exit 1; fi; \
	else \
	  rm -rf $(LOCALSTACK_VENV) && \
	  $(LOCALSTACK_PYTHON) -m venv $(LOCALSTACK_VENV) && \
	  $(LOCALSTACK_VENV)/bin/pip install $(PIP_FLAGS) -r $(LOCALSTACK_REQUIREMENTS) && \
	  touch $@; \
	fi

# `make test` installs it; tests find it at $(LOCALSTACK_VENV)/bin/python.
localstack: $(LOCALSTACK_VENV)/.installed

# The Node tools package.json pins (jsonata's reference implementation, axe-core), exactly
# as package-lock.json records them; tests find them under node_modules/.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

node: node_modules/.installed

demo: $(VENV)/.runtime
	$(BIN)/stepsaga demo

lint: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.dev
	$(BIN)/mypy

# Every test: the framework's unit, conformance, functional, chaos and infra tests and the app's.
suite: $(VENV)/.dev $(LOCALSTACK_VENV)/.installed node_modules/.installed
	$(BIN)/pytest -q

# Headless Chromium for the console's browser tests: Debian's package (no browser download
# works here). Installed when missing and possible (root with apt-get); otherwise those tests
# skip in one line (and fail under CI=true).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing and cannot be installed here: browser tests will skip"; fi; }

test: lint typecheck browser suite

# The inner loop (at most 90 s on 2 cores once mypy's cache is warm): lint, types, and the fast
# tier: tests/framework/unit and tests/app, less the tests marked `slow` (and `integration`,
# which tests/conftest.py gives by directory), at most 10 Hypothesis examples a property,
# stopping at the first failure. `make test` stays the whole suite at full example counts.
# Bytecode stays on here: pytest keeps each test module's rewritten asserts in __pycache__,
# and without it every run rewrites them all again (~5 s of the budget).
check: export PYTHONDONTWRITEBYTECODE :=
check: $(VENV)/.dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	STEPSAGA_HYPOTHESIS_PROFILE=fast $(BIN)/pytest -q -x -m "not slow and not integration" \
	  tests/framework/unit tests/app

# The console screenshots of docs/how-to/console.md (docs/console/), taken by the browser tests.
screenshots: $(VENV)/.dev browser
	STEPSAGA_SCREENSHOTS=docs/console $(BIN)/pytest -q tests/framework/functional/test_console_browser.py tests/framework/functional/test_console_operator.py

# The documentation site (mkdocs.yml, docs/) into site/, warnings as errors; the tools are
# pinned in the dev extra.
docs: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Step Functions Local and DynamoDB Local through testcontainers (needs a Docker daemon).
test-docker: $(VENV)/.dev
	$(BIN)/pytest -q -m docker -p no:cacheprovider

# Ratios measured side by side in one run, plus peak memory (docs/explanation/performance.md).
bench: $(VENV)/.dev
	$(BIN)/python bench/ledger.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/storm.py
	$(BIN)/python bench/chaos.py
	$(BIN)/python bench/peers.py
	$(BIN)/python bench/cost.py
	$(BIN)/python bench/lookups.py

# The dependency ranges at both ends: the unit tier with every runtime dependency and library
# extra at its lower bound (Python 3.11), then at the newest versions allowed (Python 3.13),
# each resolved from the package index by uv into .nox/ (noxfile.py; python3.11 and python3.13
# on PATH). Not part of `make test`: it takes minutes and needs the index.
deps-bounds: $(VENV)/.dev
	$(BIN)/nox -s lowest highest

# The sdist and the wheel in dist/, checked as PyPI renders and validates them.
dist: $(VENV)/.dev
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

clean:
	rm -rf $(VENV) $(LOCALSTACK_VENV) .stepsaga .stepsaga-demo cdk.out site .mypy_cache .ruff_cache .pytest_cache .nox dist build
