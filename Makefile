# The two commands of the README's Quick start, and a few for developers.
#   make run   installs what is missing, builds, runs the main job on bundled input
#   make test  installs what is missing, builds, runs every test
PRESET ?= release
BUILD_DIR := build/$(PRESET)
KEEL := $(BUILD_DIR)/tools/keel/keel
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test test-debug test-tsan bench lint format clean

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

lint: configure
	bash scripts/lint.sh $(BUILD_DIR)

format:
	git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf build
