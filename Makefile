# The README's two commands:
#   make run   -- set everything up, then run the main job (a CPU training loop printing MFU)
#   make test  -- set everything up, then run the C core's tests and the pytest suite
# Set-up is a virtual environment in .venv with the CPU build of torch 2.13.0,
# the package installed editable (both extensions built), and the test extras.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.mfu-deps-installed
CC ?= cc
CFLAGS_CORE := -std=c11 -Wall -Wextra -Werror -O1 -g
CORE_SRC := $(wildcard csrc/core/*.c)
CORE_HDR := $(wildcard csrc/core/*.h)
CTESTS := $(patsubst tests/c/%.c,build/ctest/%,$(wildcard tests/c/test_*.c))

.PHONY: run test build ctest pytest clean

run: build
	$(PY) examples/train_gpt2.py

test: build ctest pytest

$(STAMP): pyproject.toml setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel
	$(PIP) install torch==2.13.0
	MFU_TRACKER_WERROR=1 $(PIP) install --no-build-isolation -e '.[test]'
	touch $@

# Rebuild the extensions in place whenever a source changed (cheap when none did).
build: $(STAMP)
	MFU_TRACKER_WERROR=1 $(PY) setup.py -q build_ext --inplace

build/ctest/%: tests/c/%.c tests/c/check.h $(CORE_SRC) $(CORE_HDR)
	@mkdir -p build/ctest
	$(CC) $(CFLAGS_CORE) -Icsrc/core -Itests/c -o $@ $< $(CORE_SRC) -lm -ldl

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

pytest: build
	$(PY) -m pytest tests

clean:
	rm -rf build mfu_tracker/*.so
