# The two commands of the README: `make run` and `make test`.  Everything else helps them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The libraries bots may import (numpy; requirements/botlibs.txt), in a directory of their
# own that the sandbox binds read-only (docs/sandbox.md, "Bot libraries"): never the venv's
# site-packages, which a bot must not see.
BOTLIBS := $(VENV)/botlibs
BOTLIBS_STAMP := $(BOTLIBS)/.installed

.PHONY: run test test-fast lint typecheck bench bench-engine bench-bots bench-throughput bench-api bench-convergence \
	bench-abuse venv lock clean docs

# The virtualenv, installed from the lock (docs/installs.md): every package at its locked
# version and hash (requirements/dev.txt: the application and the dev tools; build.txt: the
# build backend), then our own packages, editable, with nothing resolved or fetched besides.
$(STAMP): pyproject.toml sdk/pyproject.toml requirements/dev.txt requirements/build.txt \
		$(BOTLIBS_STAMP)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements/build.txt -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@touch $(STAMP)

# The bot libraries: wheels only, at their locked hashes, built in a fresh directory and
# renamed into place (complete or absent), readable by the sandbox's slot uids, no scripts.
$(BOTLIBS_STAMP): requirements/botlibs.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	rm -rf $(BOTLIBS).new
	$(PY) -m pip install -q --require-hashes --no-deps --only-binary :all: \
		--target $(BOTLIBS).new -r requirements/botlibs.txt
	rm -rf $(BOTLIBS).new/bin
	chmod -R a+rX,go-w $(BOTLIBS).new
	rm -rf $(BOTLIBS) && mv $(BOTLIBS).new $(BOTLIBS)
	@touch $(BOTLIBS_STAMP)

venv: $(STAMP)

# Refreshes the lock after a change to pyproject.toml's dependencies (new ones resolved, the
# others kept at their pins): uv.lock, then the requirements files exported from it.
# `make lock LOCK_ARGS=--upgrade` moves every package to its newest release instead.
# Needs the package index; `make venv` afterwards installs what changed.
LOCK_EXPORT := $(VENV)/bin/uv export -q --frozen --no-emit-project --no-default-groups
lock:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@test -x $(VENV)/bin/uv || $(PY) -m pip install -q "uv>=0.9"
	$(VENV)/bin/uv lock $${LOCK_ARGS:-}
	$(LOCK_EXPORT) --extra dev -o requirements/dev.txt
	$(LOCK_EXPORT) -o requirements/app.txt
	$(LOCK_EXPORT) --extra ops -o requirements/ops.txt
	$(LOCK_EXPORT) --only-group build -o requirements/build.txt
	$(LOCK_EXPORT) --only-group validators -o requirements/validators.txt
	$(LOCK_EXPORT) --only-group botlibs -o requirements/botlibs.txt

# The main job: the whole arena on this machine (API and pages, workers, scheduler; SQLite
# and an SQLite broker under ./var), with the built-in bots playing a demo ladder.  Ctrl-C
# stops it.  HOST, PORT and WORKERS (matches played at once) may be set.
run: $(STAMP)
	bash .ci/system-deps.sh run
	$(VENV)/bin/cow006 serve --host $${HOST:-127.0.0.1} --port $${PORT:-8000} \
		--workers $${WORKERS:-2}

# Every test, the slow ones included (sandboxed matches, real worker processes, servers in
# subprocesses, the browser): what CI runs.  In parallel (pytest-xdist): PYTEST_WORKERS
# processes, more than the cores since most of the time is spent waiting (on subprocesses,
# bots, browsers); each test file on one process (--dist loadfile: a module's fixtures are
# built once).  PYTEST_WORKERS=0 runs them serially, in one process, as a plain `pytest`
# does (docs/testing.md).
PYTEST_WORKERS ?= 4
test: $(STAMP)
	bash .ci/system-deps.sh test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile $${PYTEST_ARGS:-}

# The inner loop: ruff and the tests not marked `slow` (pyproject's marker: over about 2 s, or
# needing the sandbox, the services, the browser or real worker processes); under a minute on
# a 2-core machine.  `make test` still runs everything.
test-fast: $(STAMP)
	bash .ci/system-deps.sh test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest -m "not slow" $${PYTEST_ARGS:-}

# Regenerates what docs hold generated from the code (the table of settings).
docs: $(STAMP)
	$(PY) -m cow006_platform.settings docs/operations.md
	cp docs/bot-guide.md platform/cow006_platform/web/guide/bot-guide.md
	cp examples/starters/python/bot.py examples/starters/python/README.md platform/cow006_platform/web/starter/python/

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory typecheck

# mypy over sdk/cow006 (strict), platform/ and workers/ (pyproject.toml, [tool.mypy]).
# About 15 s without its cache (.mypy_cache), under a second with it.
typecheck: $(STAMP)
	$(VENV)/bin/mypy

bench: bench-engine bench-bots bench-throughput bench-api bench-convergence bench-abuse

bench-engine: $(STAMP)
	$(PY) bench/engine.py

bench-bots: $(STAMP)
	$(PY) bench/bots.py

# Needs PostgreSQL and Redis on 127.0.0.1 (see docs/operations.md).
bench-throughput: $(STAMP)
	$(PY) bench/throughput.py

# A challenge flood against validations and the ladder, in one run (PostgreSQL and Redis on
# 127.0.0.1, like bench-throughput; docs/operations.md, "Work classes").
bench-abuse: $(STAMP)
	$(PY) bench/abuse.py

# Needs PostgreSQL on 127.0.0.1: seeds a database of its own (cow006_bench), reads, drops it.
bench-api: $(STAMP)
	$(PY) bench/api.py

bench-convergence: $(STAMP)
	$(PY) bench/convergence.py --scenario both

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache .hypothesis
