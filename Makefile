# The two commands of the README's Quick start, and a few for developers.
#   make run   installs what is missing, builds, runs the main job on bundled input
#   make test  installs what is missing, builds, runs every test
PRESET ?= release
BUILD_DIR := build/$(PRESET)
KEEL := $(BUILD_DIR)/tools/keel/keel
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test test-debug test-tsan hostile bench lint format format-check clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@test -f $(BUILD_DIR)/build.ninja || cmake --preset $(PRESET) >/dev/null

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

# The hostile sweep (tests/hostile) alone: only the CLI is built, e.g. `make hostile
# PRESET=debug` runs it under ASan+UBSan without building every test of that preset.
hostile: configure
	cmake --build --preset $(PRESET) -j $(JOBS) --target keel
	ctest --preset $(PRESET) -L hostile

lint: configure
	bash scripts/lint.sh $(BUILD_DIR)

FORMATTED = git ls-files '*.cpp' '*.hpp' '*.h' '*.inc' '*.cu' '*.cuh'

format:
	$(FORMATTED) | xargs clang-format -i

# CI: fails, naming the files, when any tracked source differs from .clang-format's layout.
format-check:
	$(FORMATTED) | xargs clang-format --dry-run -Werror

clean:
	rm -rf build
