# Two commands a reader needs: `make serve` and `make test`. Each sets itself up:
# a .venv with the pinned Python packages and node_modules from package-lock.json.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve test build figures bench lint clean setup

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

## Build the site and serve it on http://127.0.0.1:8000, rebuilding when sources change.
serve: setup
	$(PY) scripts/serve.py --build --watch

## Run every test: unit, golden, property, CLI, site build, Node/Pyodide and browser.
test: setup
	$(PY) -m pytest

## Build the site into site/ without serving it.
build: setup
	$(PY) -m mkdocs build --strict

## Regenerate the tables and charts in figures/ from the spec files.
figures: setup
	$(PY) scripts/build_figures.py

## Measure the package sweep and the site (see scripts/bench.py --help).
bench: setup
	$(PY) scripts/bench.py

lint: setup
	$(PY) -m ruff check roofline scripts tests

clean:
	rm -rf site build dist *.egg-info
