# The two commands of the README: `make run` and `make test`.  Everything else helps them.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-engine bench-bots venv clean

$(STAMP): pyproject.toml sdk/pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

# The main job.  Until the platform exists: a local demo tournament of the built-in bots.
run: $(STAMP)
	$(VENV)/bin/cow006 tournament builtin:best builtin:greedy builtin:safe builtin:random \
		--matches $${MATCHES:-100} --players 4 --jobs $${JOBS:-2} --out var/demo --seed 1

test: $(STAMP)
	bash .ci/test-deps.sh
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/pytest $${PYTEST_ARGS:-}

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: bench-engine bench-bots

bench-engine: $(STAMP)
	$(PY) bench/engine.py

bench-bots: $(STAMP)
	$(PY) bench/bots.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
