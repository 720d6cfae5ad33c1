# The two commands of the README: `make demo` and `make test`.
# Each creates .venv when it is missing and installs dpfair with pinned dependencies.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.dpfair-installed
OUT ?= results
# Real datasets: DPFAIR_DATA_HOME if set; else the staged copies beside the checkout, when present.
# Experiments whose data is missing are skipped with instructions; synthetic ones always run.
export DPFAIR_DATA_HOME ?= $(if $(wildcard ../shared/data),$(abspath ../shared/data),)
export MPLBACKEND ?= Agg

.PHONY: demo test lint bench privacy-demo clean

$(STAMP): pyproject.toml requirements/constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip==26.3"
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt -e ".[test]"
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/dpfair run all --quick --out $(OUT)
	$(BIN)/dpfair report --out $(OUT)
	@echo "open $(OUT)/report/index.html"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples

test: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_privacy.py
	$(BIN)/python benchmarks/bench_regression.py

privacy-demo: $(STAMP)
	$(BIN)/python examples/privacy_core_demo.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
