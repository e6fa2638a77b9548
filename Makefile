# Two commands: `make test` (set up + lint + the whole suite) and `make run` (set up + the engine).
# Both do all of their own set-up on a fresh machine: virtualenv, Python packages, and the
# Debian programs the tests use (gnugo, stockfish, fairy-stockfish, chromium), and Pachi, built from source.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.klent-installed
# Bytecode written once, because nothing writes it where PYTHONDONTWRITEBYTECODE is set (as on
# this project's machines): every process that imports torch then compiled it again, 2-6 s each,
# and the suite starts dozens.  A file that does not compile (torch ships Python 3.12 syntax in
# its test helpers) only stays uncompiled, so compileall's status is not the set-up's.
COMPILE := $(PY) -m compileall -q -q -j 0

.PHONY: setup system-deps pachi lint test run clean

# The 3- and 4-piece Syzygy tables python-chess ships, unpacked to ~/.cache/klent/syzygy (once).
setup: $(STAMP)
	bash scripts/syzygy-tables.sh $(PY)

# torch is pinned to the CPU build first: the `train` extra alone would pull a CUDA build.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[server,train,dev,bot]'
	$(COMPILE) $(VENV)/lib || true
	touch $(STAMP)

system-deps:
	bash scripts/install-debian-deps.sh

# Pachi, the Go engine of the strength matches, built from source into the virtualenv (Debian has none).
pachi: setup system-deps
	bash scripts/install-pachi.sh $(VENV)

# ruff on the whole tree, mypy on klent/engine/, klent/protocols/ and klent/matchplay/ (both configured in pyproject.toml).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# One pytest worker per core (pytest-xdist): the tests are independent (each has its own temporary
# folder and models), so they run side by side on every core the machine has; a worker that runs
# out of tests takes some of the other's (worksteal), so one long test at the end idles no core.
# The numba kernels are compiled into their cache first, once, rather than by each worker and
# each engine process a test starts (klent/engine/kernels.py).
test: setup system-deps pachi lint
	$(COMPILE) klent tests
	$(PY) -m klent.engine.kernels
	$(PY) -m pytest -q -n auto --dist worksteal

run: setup
	$(VENV)/bin/klent serve

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build *.egg-info
