# Two commands a reader needs: `make serve` and `make test`. Each sets itself up:
# a .venv with the pinned Python packages and node_modules from package-lock.json.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve test test-fast test-stress new-chapter build figures bench lint clean setup installs

# The Python packages and node_modules install side by side (each mostly waits on its registry);
# a step whose stamp is newer than its inputs is skipped, so a second `make test` installs nothing.
setup:
	@$(MAKE) --no-print-directory -j2 installs

installs: $(VENV)/.installed $(VENV)/.scripts-on-path node_modules/.installed
	@:

# --no-compile: Python compiles a module the first time it is imported, so the many modules
# no command here ever imports (IPython's, jedi's, ...) are not compiled at install time.
$(VENV)/.installed: requirements.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $@

# scripts/ on the venv's path (a .pth file, as an editable install writes), so that
# `import sitegen` works alike in MkDocs's hooks, the scripts, the tests and the benchmarks.
$(VENV)/.scripts-on-path: $(VENV)/.installed
	$(PY) -c "import pathlib, sys, sysconfig; pathlib.Path(sysconfig.get_path('purelib'), 'roofline-scripts.pth').write_text(sys.argv[1] + '\n')" "$(CURDIR)/scripts"
	touch $@

# --prefer-offline: a tarball already in npm's cache is used without asking the registry again
# (package-lock.json pins each one's integrity hash, which npm checks either way).
node_modules/.installed: package.json package-lock.json
	npm ci --prefer-offline --no-audit --no-fund
	touch $@

## Build the site and serve it on http://127.0.0.1:$(PORT) (8000 unless PORT=... says), rebuilding when sources change.
PORT ?= 8000
serve: setup
	$(PY) scripts/serve.py --build --watch --port "$(PORT)"

# One pytest worker a core, up to four (pytest-xdist); conftest.py hands the longest tests out
# first, and the tests' site is built once, by the first worker that needs it.
WORKERS ?= $(shell $(PYTHON) -c "import os; print(min(4, os.cpu_count() or 1))")
# --no-loadscope-reorder keeps conftest.py's longest-first order. --max-worker-restart 0: a worker
# that dies (killed for memory, say) ends the run at once, naming its test; pytest-xdist 3.8 with
# --dist loadgroup can hang for good when it replaces one (pytest-dev/pytest-xdist#1323).
XDIST := -n $(WORKERS) --dist loadgroup --no-loadscope-reorder --max-worker-restart 0

## Run every test: unit, golden, property, CLI, site build, Node/Pyodide and browser.
test: setup
	$(PY) -m pytest $(XDIST)

## The author's loop (under a minute): the linter, then every test but the site builds, subprocess runs, SVG
## re-renders, Pyodide and the browser.
test-fast: setup
	$(PY) -m ruff check
	$(PY) -m ruff format --check
	$(PY) -m pytest $(XDIST) -m "not slow and not browser and not node" -q

## The browser tests RUNS times in a row (3) beside BUSY processes that each spin a core (2): each
## run's counts, time and load, and the flake rate (scripts/stress_tests.py).
RUNS ?= 3
BUSY ?= 2
test-stress: setup
	$(PY) scripts/stress_tests.py --runs "$(RUNS)" --busy "$(BUSY)" --workers "$(WORKERS)"

## Write a chapter that passes every chapter test: make new-chapter SLUG=moe TITLE="Mixture of Experts"
## (scripts/new_chapter.py reads SLUG, TITLE and the optional SHORT and MODULE from the environment,
## so a title's quotes and apostrophes reach it as typed), then regenerate figures/.
new-chapter: setup
	$(PY) scripts/new_chapter.py
	$(PY) scripts/build_figures.py

## Build the site into site/ without serving it.
build: setup
	$(PY) -m mkdocs build --strict

## Regenerate the tables and charts in figures/ from the spec files.
figures: setup
	$(PY) scripts/build_figures.py

## Measure the package sweep and the site (see scripts/bench.py --help).
bench: setup
	$(PY) scripts/bench.py

## ruff over every Python file of the repository, its rules and its layout (what tests/test_lint.py runs too).
lint: setup
	$(PY) -m ruff check
	$(PY) -m ruff format --check

clean:
	rm -rf site build dist *.egg-info
