#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds keel (release preset) and runs the GPU check of
# keel::random's CUDA kernels — bit equality with cuRAND's device generator and GB/s next to
# the card's copy bandwidth. Prints the check's JSON; exits non-zero on any mismatch.
# Usage: tests/random/gpu/run.sh [build-dir]   (default build/release)
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
build="${1:-$root/build/release}"
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake --preset release -S "$root" >/dev/null
fi
cmake --build "$build" --target keel_random_gpu_check -j"$(nproc)"
exec "$build/tests/random/keel_random_gpu_check"
