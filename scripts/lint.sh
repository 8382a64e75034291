#!/usr/bin/env bash
# clang-tidy with .clang-tidy (naming, bug-prone and performance checks) over keel's own
# sources, every warning an error. $1: a configured build directory (compile_commands.json).
# JOBS: parallel clang-tidy processes (default: the CPU count). Left out, explicitly: the
# translation units of random's GCC vector-extension kernels that clang cannot parse
# (__builtin_shuffle and vector conversions clang spells differently), and serve's libtorch
# translation unit (clang rejects libtorch 1.13's headers in C++20: c10::IValue is not
# destructible where std::vector<IValue> is instantiated); the format check is
# `make format-check`.
set -euo pipefail
build_dir="$1"
jobs="${JOBS:-$(nproc)}"
unparsable='^src/random/cpu_kernels/(mtgp32|normal_icdf)_avx(2|512)\.cpp$|^src/random/cpu_kernels/simd_avx512\.cpp$|^src/serve/backends/torchscript\.cpp$'
mapfile -t sources < <(git ls-files 'src/*.cpp' 'tools/*.cpp' | grep -v -E "$unparsable")
echo "clang-tidy: ${#sources[@]} files, $jobs at a time"
# clang-tidy's "N warnings generated." counts the system headers' suppressed warnings: noise.
log="$(mktemp)"
db="$(mktemp -d)"
trap 'rm -rf "$log" "$db"' EXIT
# Precompiled headers (KEEL_PCH) are GCC's, which clang cannot read: clang-tidy gets the
# compile commands without them (every source includes what it uses), and GCC-only warning
# flags are let pass.
sed -E 's# -Winvalid-pch -include [^ ]*cmake_pch\.hxx##g' "$build_dir/compile_commands.json" \
  >"$db/compile_commands.json"
ok=1
printf '%s\n' "${sources[@]}" |
  xargs -P "$jobs" -n 4 clang-tidy -p "$db" --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1 || ok=0
grep -v -E '^[0-9]+ (warnings?|errors?)( and [0-9]+ errors?)? generated\.$' "$log" || true
[ "$ok" -eq 1 ] || { echo "clang-tidy: warnings above are errors" >&2; exit 1; }
echo "clang-tidy: clean"
