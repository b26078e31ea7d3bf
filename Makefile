# Two commands for a newcomer: `make run` (the main job) and `make test` (lint, docs site, test suite).
# `make docs` builds the documentation site (docs/, mkdocs.yml) into site/.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
OUT     ?= runs/compare
# torch comes in first as the CPU wheel, so that the project's `torch>=2.1` is already satisfied
# and pip never pulls a multi-GB CUDA build.
TORCH   ?= torch==2.13.0
# test workers (pytest-xdist): whole test modules spread over the cores; the suite is sized for 2.
# The tests write bytecode (__pycache__, git-ignored) even where the shell sets PYTHONDONTWRITEBYTECODE:
# otherwise every process they start (workers, CLI runs, Ray actors) compiles the package's sources again.
TEST_JOBS ?= 2

.PHONY: install run test docs quick bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	$(BIN)/python -m selfplay.envs.smac.precompile  # numba's compile of the SMAC engine, once (minutes)
	touch $(STAMP)

run: install
	$(BIN)/selfplay compare --seeds 0,1,2 --out $(OUT)

test: install
	$(BIN)/ruff check .
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile

docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

quick: install
	$(BIN)/selfplay compare --quick --out runs/quick

bench: install
	$(BIN)/python -m pip install -q -e ".[dev,bench]"

clean:
	rm -rf $(VENV) runs site build
