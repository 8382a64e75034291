#!/usr/bin/env bash
# Replays every shared PyTorch snapshot under PyTorch's recorded settings, PyTorch with
# expandable segments, and keel's policy, and prints the docs/BENCHMARKS.md table.
# Usage: scripts/bench-memory-replay.sh [keel-executable] [traces-folder]
set -euo pipefail
keel="${1:-build/release/tools/keel/keel}"
traces="${2:-../shared/traces/pytorch}"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
echo "| trace | events | peak allocated | pytorch (recorded) | fidelity | expandable_segments | keel | keel frag | replay time |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for f in "$traces"/*.pickle; do
  name=$(basename "$f" .pickle)
  base=$("$keel" mem replay "$f" --json)
  exp=$("$keel" mem replay "$f" --json --conf expandable_segments:True)
  keel_r=$("$keel" mem replay "$f" --json --policy keel)
  "$py" - "$name" <<PY "$base" "$exp" "$keel_r"
import json, sys
name, base, exp, keel = sys.argv[1], *map(json.loads, sys.argv[2:5])
wall = f"{base['elapsed_ms']:.0f}"
def gb(x): return f"{x / 1e9:.3f} GB"
def frag(j): return f"{j['fragmentation']:.3f}" if j['peak_allocated'] else "-"
fid = base["fidelity"]
fid_s = f"{fid['matched']}/{fid['recorded_segments']}" if fid else "no segment events"
if base["peak_allocated"] == 0:
    print(f"| {name} | {base['events']} | - | - | - | - | - | - | {wall} ms |")
else:
    print(f"| {name} | {base['events']} | {gb(base['peak_allocated'])} | {gb(base['peak_reserved'])} ({frag(base)}) | {fid_s} | "
          f"{gb(exp['peak_reserved'])} ({frag(exp)}) | {gb(keel['peak_reserved'])} | {frag(keel)} | {wall} ms |")
PY
done
