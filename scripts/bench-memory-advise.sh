#!/usr/bin/env bash
# Runs `keel mem advise --json` on every shared PyTorch snapshot and prints the tables of
# docs/BENCHMARKS.md: the replay's fidelity to the recording per (trace, device), and per mode
# the recorded peak against PyTorch's best setting and keel's policy, all from the same start.
# Usage: scripts/bench-memory-advise.sh [keel-executable] [traces-folder]
set -euo pipefail
keel="${1:-build/release/tools/keel/keel}"
traces="${2:-../shared/traces/pytorch}"
py=/usr/bin/python3
[ -x "$py" ] || py=python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for f in "$traces"/*.pickle; do "$keel" mem advise "$f" --json > "$out/$(basename "$f").json"; done
"$py" - "$out" <<'PY'
import glob, json, os, sys
docs = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json")))]
def gib(x): return f"{x / 2**30:.2f}"
def mib(x): return f"{x / 2**20:+.0f}"
print("| trace | device | segment events | replayed in order | peak reserved recorded / replayed (GiB) | OOMs reproduced | blocks at the recorded address |")
print("|---|---:|---:|---:|---:|---:|---:|")
for d in docs:
    name = os.path.basename(d["trace"]).removesuffix(".pickle")
    for dev in d["devices"]:
        f = dev["fidelity"]
        if f is None:
            print(f"| {name} | {dev['device']} | 0 | - | - | - | - |")
            continue
        print(f"| {name} | {dev['device']} | {f['recorded_segments']} | {f['matched']}/{f['recorded_segments']} | "
              f"{gib(f['recorded_peak_reserved'])} / {gib(f['replayed_peak_reserved'])}{'' if f['recorded_peak_reserved'] == f['replayed_peak_reserved'] else ' (differs)'} | "
              f"{f['reproduced_ooms']}/{f['recorded_ooms']} | {f['allocs_at_recorded_address']}/{f['allocs']} |")
print()
print("| trace | device | mode | recorded peak (GiB) | PyTorch's best setting | its peak (GiB) | saving (MiB) | keel's policy peak (GiB) | saving (MiB) | keel vs best PyTorch (MiB) |")
print("|---|---:|---|---:|---|---:|---:|---:|---:|---:|")
for d in docs:
    name = os.path.basename(d["trace"]).removesuffix(".pickle")
    for dev in d["devices"]:
        if not dev["comparable"]:
            print(f"| {name} | {dev['device']} | - | {gib(dev['recorded']['peak_reserved'])} | not comparable: no segment events | | | | | |")
            continue
        for m in dev["modes"]:
            c = m["candidates"]
            bp = c[m["best_pytorch"]] if m["best_pytorch"] is not None else None
            k = c[m["best_keel"]] if m["best_keel"] is not None else None
            def cell(x):
                if x is None: return "- | - | -" if x is not k else "- | -"
                return f"{gib(x['peak_reserved'])} | {mib(x['saving'])}{' OOM' if x['oom'] else ''}"
            bp_s = f"`{bp['label']}` | {cell(bp)}" if bp else "every setting OOMs | - | -"
            k_s = cell(k) if k else "- | -"
            diff = f"{mib(bp['peak_reserved'] - k['peak_reserved'])}" if bp and k and not k["oom"] else "-"
            print(f"| {name} | {dev['device']} | {m['mode']} | {gib(dev['recorded']['peak_reserved'])} | {bp_s} | {k_s} | {diff} |")
PY
