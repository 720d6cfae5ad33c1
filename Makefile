# The two commands of the README: `make demo` and `make test`.
# Each creates .venv when it is missing and installs dpfair with pinned dependencies.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.dpfair-installed
DOCS_STAMP := $(VENV)/.dpfair-docs-installed
OUT ?= results
DATA_STAMP := $(VENV)/etc/dpfair/data-home
# Real datasets: the CLI's own rule (`dpfair data info`): $$DPFAIR_DATA_HOME if set, else the folder saved
# with `dpfair data home PATH`, else ~/.cache/dpfair. The first `make` saves the staged copies beside the
# checkout (../shared/data), when present and no DPFAIR_DATA_HOME is set, so `make demo` and a bare
# `.venv/bin/dpfair run` see the same data. Experiments whose data is missing are skipped with instructions.
export MPLBACKEND ?= Agg

.PHONY: demo test test-quick lint data-home bench privacy-demo docs docs-clean package-check clean

# The pinned dependencies go in with uv (pinned too, itself installed by pip: 19 s against pip's 43 s for the same
# versions, bytecode compiled as pip does); where uv cannot reach the package index (it reads no pip.conf: a
# mirror or find-links configured for pip only), pip installs them instead, from the same constraints.
EXTRAS := test,federated,simulation
DOCS_EXTRAS := $(EXTRAS),docs
INSTALL = $(BIN)/uv pip install --quiet --python $(BIN)/python --native-tls --compile-bytecode \
	-c requirements/constraints.txt -e ".[$(1)]" || $(BIN)/python -m pip install --quiet \
	-c requirements/constraints.txt -e ".[$(1)]"

$(STAMP): pyproject.toml requirements/constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip==26.3"
	$(BIN)/python -m pip install --quiet -c requirements/constraints.txt uv
	$(call INSTALL,$(EXTRAS))
	@touch $(STAMP)

# The documentation tools (the `docs` extra), on top of the install above.
$(DOCS_STAMP): $(STAMP)
	$(call INSTALL,$(DOCS_EXTRAS))
	@touch $(DOCS_STAMP)

# Runs every time (cheap): saves ../shared/data only when no variable is set and nothing is saved yet,
# so a first `make` run with DPFAIR_DATA_HOME set (as CI does) does not block a later save.
data-home: $(STAMP)
	@if [ -z "$$DPFAIR_DATA_HOME" ] && [ ! -s $(DATA_STAMP) ] && [ -d ../shared/data ]; then $(BIN)/dpfair data home ../shared/data; fi

demo: $(STAMP) data-home
	$(BIN)/dpfair run all --quick --out $(OUT)
	$(BIN)/dpfair report --out $(OUT)
	@echo "open $(OUT)/report/index.html"

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples docs scripts

# The whole suite in two pytest calls: every test but those marked `serial` on $(TEST_WORKERS) workers
# (pytest-xdist; one BLAS thread and one OpenMP thread each, so the workers do not oversubscribe the cores:
# scikit-learn's gradient-boosted trees spin OpenMP threads, 84 s for a test of 0.6 s at load 6), then the `serial`
# ones (real Flower/Ray processes, whose checks watch process trees, CPU use and round-trip pace), all under
# tests/federated (tests/conftest.py refuses a serial test elsewhere; collecting the whole suite again cost ~10 s),
# one at a time, but for the deployment page's replay (stock Flower, waiting in 3 s polls) and the process-hygiene
# tests, on a second worker beside the first few (tests/conftest.py's scheduler for -m serial).
# `make test TEST_WORKERS=0` runs both calls in one process (any other value: the serial call on its 2 workers);
# both calls give each worker one BLAS and one OpenMP thread. Each call prints its 25 slowest tests
# (`--durations=25`), so the log shows where the suite's minutes go.
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
DURATIONS := --durations=25
PARALLEL := OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PYTEST) -n $(TEST_WORKERS) --dist worksteal

test: lint data-home
	$(PARALLEL) $(DURATIONS) -m "not serial"
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PYTEST) $(DURATIONS) -n $(if $(filter 0,$(TEST_WORKERS)),0,2) -m serial tests/federated

# A contributor's quick run: every test but those marked slow (real processes, statistical audits, long
# reproductions; every `serial` test is also `slow`, tests/conftest.py checks it), on the same workers;
# CI runs `make test`, everything.
test-quick: lint data-home
	$(PARALLEL) $(DURATIONS) -m "not slow"

bench: $(STAMP) data-home
	$(BIN)/python benchmarks/bench_privacy.py
	$(BIN)/python benchmarks/bench_regression.py
	$(BIN)/python benchmarks/bench_classification.py
	$(BIN)/python benchmarks/bench_bandits.py
	$(BIN)/python benchmarks/bench_federated.py
	$(BIN)/python benchmarks/bench_federated_secure.py
	$(BIN)/python benchmarks/bench_flower.py
	$(BIN)/python benchmarks/bench_metrics.py

privacy-demo: $(STAMP)
	$(BIN)/python examples/privacy_core_demo.py

# The documentation site: docs/_build/html/index.html. Every warning is an error; the gallery runs
# every examples/plot_*.py (DPFAIR_DOCS_GALLERY_PATTERN=plot_name builds only the matching ones).
docs: $(DOCS_STAMP) data-home
	$(BIN)/sphinx-build -W --keep-going -q -b html -d docs/_build/doctrees docs docs/_build/html
	@echo "open docs/_build/html/index.html"

docs-clean:
	rm -rf docs/_build docs/_generated docs/api/generated docs/auto_examples docs/sg_execution_times.rst

# Build the wheel and sdist, install the wheel into a fresh virtual environment (no test extras)
# and run the `dpfair` command and a gallery example there (tests/test_packaging.py; about a minute).
package-check: $(STAMP)
	DPFAIR_PACKAGE_CHECK=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_packaging.py

clean: docs-clean
	rm -rf $(VENV) .pytest_cache .ruff_cache dist
