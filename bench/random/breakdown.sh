#!/bin/sh
# Where a CPU normal's time goes, per stage and SIMD level: instruction counts under
# callgrind (stable on shared machines) and ns per value (best of many cache-resident passes).
#
#   bench/random/breakdown.sh BUILD_DIR [LEVEL ...]      (levels: avx2 avx512; default avx2)
#
# Per stage (keel_random_breakdown's help): instructions per value = (Ir of the stage - Ir of
# the setup alone) / values. Needs valgrind for the counts (without it, times only); valgrind
# emulates no AVX-512, so avx512 rows have times only.
set -eu
build=$1
shift
levels=${*:-avx2}
prog=$build/bench/random/keel_random_breakdown
n=65536
reps=20
ir() {
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" "$prog" "$1" "$2" $n $reps 2>&1 >/dev/null |
    awk '/Collected/ {print $4}'
  rm -f "$out"
}
printf '%-7s %-8s %10s %14s\n' level stage ns/value instr/value
for level in $levels; do
  base=
  if command -v valgrind >/dev/null && [ "$level" != avx512 ]; then base=$(ir "$level" none); fi
  for stage in u32 uniform normal log sincos icdf double double_glibc; do
    ns=$("$prog" "$level" "$stage" $n 300 | awk '{print $3}')
    per=-
    if [ -n "$base" ]; then
      per=$(awk -v a="$(ir "$level" "$stage")" -v b="$base" -v v=$((n * reps)) \
        'BEGIN {printf "%.2f", (a - b) / v}')
    fi
    printf '%-7s %-8s %10s %14s\n' "$level" "$stage" "$ns" "$per"
  done
done
