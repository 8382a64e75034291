# The two commands of the README's Quick start, and a few for developers.
#   make run   installs what is missing, builds, runs the main job on bundled input
#   make test  installs what is missing, builds, runs every test
PRESET ?= release
BUILD_DIR := build/$(PRESET)
KEEL := $(BUILD_DIR)/tools/keel/keel
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test test-debug test-tsan sanitize hostile bench lint format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

# CMAKE_ARGS (e.g. -DKEEL_WERROR=ON) reconfigures an existing build directory too.
CMAKE_ARGS ?=

configure: deps
	@if [ ! -f $(BUILD_DIR)/build.ninja ] || [ -n "$(CMAKE_ARGS)" ]; then \
	  cmake --preset $(PRESET) $(CMAKE_ARGS) >/dev/null; fi

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

run: build
	@bash scripts/run-main.sh $(KEEL)

test: build
	ctest --preset $(PRESET) -j $(JOBS)

test-debug:
	$(MAKE) test PRESET=debug

test-tsan:
	$(MAKE) test PRESET=tsan

# CI's sanitizer stage: every unit test and the hostile sweep under ASan+UBSan (the debug
# preset; its test preset leaves out the gpu, install, slow, browser and python labels and
# seven random tests that repeat, at volume, what others check: golden answers, libcurand's
# output over long slices and call sequences, thread and SIMD independence, the MT19937
# polynomial; UBSan without its alignment and vptr checks, and executables linked without
# PIE: UBSan's per-check data made every process start relocate and copy 45 MB, and LSan
# scan it: 0.32 s per start of keel, 0.19 without PIE), then the memory, comm and serve
# tests under ThreadSanitizer (only their three test programs are built, not the CLI, serve's
# TorchScript backend nor its protocol/HTTP program; serve's two protobuf translation units are
# built uninstrumented, to match Debian's libprotobuf). Also left out: the tests that start the keel
# executable or other programs, and the single-threaded randomized conformance sequences and
# trace analyses, 65% of TSan's test time, are left to the other builds).
sanitize:
	$(MAKE) test PRESET=debug
	$(MAKE) configure PRESET=tsan
	cmake --build --preset tsan -j $(JOBS) --target keel_memory_tests keel_comm_tests keel_serve_tests
	ctest --preset tsan -j $(JOBS) -L 'memory|comm|serve'

# The hostile sweep (tests/hostile) alone: only the CLI is built, e.g. `make hostile
# PRESET=debug` runs it under ASan+UBSan without building every test of that preset.
hostile: configure
	cmake --build --preset $(PRESET) -j $(JOBS) --target keel
	ctest --preset $(PRESET) -j $(JOBS) -L hostile

lint: configure
	bash scripts/lint.sh $(BUILD_DIR)

FORMATTED = git ls-files '*.cpp' '*.hpp' '*.h' '*.inc' '*.cu' '*.cuh'

format: deps
	$(FORMATTED) | xargs clang-format -i

# CI: fails, naming the files, when any tracked source differs from .clang-format's layout.
format-check: deps
	$(FORMATTED) | xargs clang-format --dry-run -Werror

clean:
	rm -rf build
