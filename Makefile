# The two commands of the README:
#   make run    the main job on the embedded default (SQLite file, in-process workers)
#   make test   install everything the tests need (PostgreSQL included), build the docs and run the tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DB     ?= sqlite:///.ostinato/ostinato.db
# extra arguments of `ostinato demo` for `make run` (e.g. DEMO_ARGS="--seconds 5")
DEMO_ARGS ?=

.PHONY: run example test lint docs install install-test install-docs system-deps bench clean fuzz calendars dist swh-compat

# Each step leaves its marker only once it has succeeded: an interrupted `make run` or `make test`
# leaves no virtualenv that looks complete, and the next one finishes (or redoes) the work.
$(VENV)/.created:
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	touch $@

# the runtime install of `make run`: the core and the simulator's numpy (the `sim` extra), nothing else
$(VENV)/.installed: pyproject.toml | $(VENV)/.created
	$(BIN)/pip install -q -e '.[sim]'
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/.created
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-docs

$(VENV)/.installed-docs: pyproject.toml | $(VENV)/.created
	$(BIN)/pip install -q -e '.[docs]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-docs: $(VENV)/.installed-docs

# the demo: a simulated forge of 3,000 sources kept fresh by the real scheduler, in
# accelerated time, for a minute (its own SQLite file, .ostinato/demo.db)
run: install
	$(BIN)/ostinato demo $(DEMO_ARGS)

# the example jobs of `ostinato example install`, run by `ostinato run` until Ctrl-C; it
# shortens the cooldowns after a visit (12 h and 1 day by default) so that a changed
# directory is visited again within a minute
example: install
	$(BIN)/ostinato --db $(DB) example install
	OSTINATO_ABSOLUTE_COOLDOWN=30s OSTINATO_MINIMUM_INTERVAL=30s $(BIN)/ostinato --db $(DB) run

system-deps:
	scripts/install-system-deps

# the tests run in parallel, in TEST_WORKERS processes (pytest-xdist): most of a test's time is spent
# waiting on the servers and processes it starts, so more workers than the machine's 2 cores keep them busy
TEST_WORKERS ?= 4

# ruff's rules (pyproject.toml) on every Python file, and mypy's checks on src/ at its default strictness
lint: install-test
	$(BIN)/ruff check src tests bench test_servers
	$(BIN)/mypy

test: system-deps install-test lint docs
	$(BIN)/pytest -q -p no:cacheprovider -n $(TEST_WORKERS)

# the documentation site (mkdocs.yml, docs/) into site/, every warning an error (broken links,
# pages missing from the nav); `.venv/bin/mkdocs serve` serves it while you edit.
# NO_MKDOCS_2_WARNING: the theme's banner about its successor, printed at every build
docs: install-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# the fuzz tests of bad input (tests/fuzz) with 20 times the examples `make test` runs, new ones each time
fuzz: system-deps install-test
	OSTINATO_FUZZ_EXAMPLES=20 $(BIN)/pytest tests/fuzz -q -p no:cacheprovider --hypothesis-show-statistics

# the calendar rules against croniter, systemd-analyze and dateutil with 10 times the examples of
# `make test` (about a minute), new ones each time
calendars: system-deps install-test
	OSTINATO_CALENDAR_EXAMPLES=1500 $(BIN)/pytest tests/unit/test_calendar_references.py -q -p no:cacheprovider

# swh-scheduler 3.6.0's own tests (test_scheduler.py, test_journal_client.py) through its own client against
# `ostinato swh-rpc serve`, on SQLite and PostgreSQL; then the differential harness's long form (10 seeds of 300
# random operations sent to swh-scheduler's own server and to the face, every answer compared); makes
# .bench-venvs/swh-scheduler-3.6.0 on first use. JSON under bench/results/ (see docs/reference/swh-compat.md).
# `make test` runs the suites and the harness's short form (tests/e2e/test_swh_compat_short.py, test_swh_diff_short.py).
swh-compat: install-test system-deps
	$(BIN)/python bench/face/swh_compat.py
	$(BIN)/python bench/face/swh_diff.py

bench: install-test system-deps
	$(BIN)/python bench/limits/tasks.py

# the wheel and the source archive in dist/, checked by twine
dist: install-test
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

clean:
	rm -rf $(VENV) .ostinato build dist site src/*.egg-info
