#!/usr/bin/env bash
# Formatting (clang-format, .clang-format) and naming/bug-prone checks (clang-tidy,
# .clang-tidy) over keel's own sources. $1: a configured build directory.
set -euo pipefail
build_dir="$1"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' | grep -v '^tests/install/consumer/')
clang-format --dry-run -Werror "${files[@]}"
mapfile -t sources < <(git ls-files 'src/*.cpp' 'tools/*.cpp')
clang-tidy -p "$build_dir" --quiet "${sources[@]}"
