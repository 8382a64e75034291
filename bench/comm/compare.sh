#!/usr/bin/env bash
# keel comm bench vs Open MPI's MPI_Allreduce, same sizes, same machine, one script.
#   bench/comm/compare.sh [BUILD_DIR] [RANK COUNTS...]      (default: build/release 2 4)
# Prints both nccl-tests tables for every rank count, then a summary: busbw at 16 MiB and
# 64 MiB and the 8-byte latency, keel / Open MPI. Environment: ITERS (20), WARMUP (5),
# TRANSPORT (shm), MINBYTES (8), MAXBYTES (64M), FACTOR (2), REPEAT (1).
# REPEAT=R runs each program R times, alternating keel and Open MPI, and the summary shows
# each side's median and best run per size (highest busbw, lowest time): on a machine shared
# with other work the best filters out runs another process disturbed, for both sides alike.
# Both launchers pin their ranks to CPUs (Open MPI's default binding, keel's --bind core).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build/release}"
shift || true
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(2 4)
keel="$build/tools/keel/keel"
mpi="$build/bench/comm/keel_comm_mpi_allreduce"
for f in "$keel" "$mpi"; do
  [ -x "$f" ] || { echo "compare.sh: $f not built (cmake --build --preset release --target keel keel_comm_mpi_allreduce)" >&2; exit 2; }
done
iters="${ITERS:-20}" warmup="${WARMUP:-5}" transport="${TRANSPORT:-shm}" maxbytes="${MAXBYTES:-64M}" factor="${FACTOR:-2}"
minbytes="${MINBYTES:-8}" repeat="${REPEAT:-1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
flags=(-b "$minbytes" -e "$maxbytes" -f "$factor" -n "$iters" -w "$warmup" -c 1)
echo "# machine: $(nproc) CPUs, $(uname -sr); $(mpirun --version 2>/dev/null | head -1)"
for n in "${counts[@]}"; do
  for rep in $(seq "$repeat"); do
    echo "## $n ranks, run $rep/$repeat: keel comm bench -N $n --transport $transport ${flags[*]}"
    "$keel" comm bench -N "$n" --transport "$transport" "${flags[@]}" | tee "$tmp/keel-$n-$rep.txt"
    echo "## $n ranks, run $rep/$repeat: mpirun -np $n keel_comm_mpi_allreduce ${flags[*]}"
    mpirun --allow-run-as-root --oversubscribe -np "$n" "$mpi" "${flags[@]}" | tee "$tmp/mpi-$n-$rep.txt"
  done
done
python3 - "$tmp" "$repeat" "${counts[@]}" <<'PY'
import sys
tmp, repeat, counts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]

def rows(prefix):
    """Per size, every run's (time_us, busbw)."""
    out = {}
    for rep in range(1, repeat + 1):
        for line in open(f"{prefix}-{rep}.txt"):
            f = line.split()
            if line.startswith("#") or len(f) < 9:
                continue
            out.setdefault(int(f[0]), []).append((float(f[5]), float(f[7])))
    return out

def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

def ratio(a, b):
    return a / b if b else float("inf")

runs = f" ({repeat} runs each: median / best)" if repeat > 1 else ""
print(f"\n## summary{runs} (out-of-place; ratio > 1 means keel is better)")
print("| ranks | metric | keel | Open MPI | keel vs Open MPI |")
print("| --- | --- | --- | --- | --- |")
for n in counts:
    k, m = rows(f"{tmp}/keel-{n}"), rows(f"{tmp}/mpi-{n}")
    cells = []
    for size in (16 << 20, 64 << 20):
        if size in k and size in m:
            kb, mb = [bw for _, bw in k[size]], [bw for _, bw in m[size]]
            cells.append((f"busbw {size >> 20} MiB (GB/s)", (median(kb), max(kb)), (median(mb), max(mb)), True))
    if 8 in k and 8 in m:
        kt, mt = [t for t, _ in k[8]], [t for t, _ in m[8]]
        cells.append(("8 B latency (us)", (median(kt), min(kt)), (median(mt), min(mt)), False))
    for metric, a, b, higher in cells:
        r = [ratio(x, y) if higher else ratio(y, x) for x, y in zip(a, b)]
        if repeat > 1:
            print(f"| {n} | {metric} | {a[0]:.2f} / {a[1]:.2f} | {b[0]:.2f} / {b[1]:.2f} | {r[0]:.2f}x / {r[1]:.2f}x |")
        else:
            print(f"| {n} | {metric} | {a[0]:.2f} | {b[0]:.2f} | {r[0]:.2f}x |")
PY
