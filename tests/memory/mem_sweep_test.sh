#!/usr/bin/env bash
# The `keel mem` sweep: every command on every snapshot in a directory, without a capacity and
# with capacities from 1 GiB to 200 GiB. Fails on any exit code other than 0 or 2 (an abort,
# a crash, an internal error) and on more than 10 note lines in any output.
# Usage: mem_sweep_test.sh KEEL TRACE_DIR (exit 77, a skip, when TRACE_DIR is absent)
set -u
keel=$1
dir=$2
if [ ! -d "$dir" ]; then
  echo "mem sweep: skipped, no snapshots at $dir"
  exit 77
fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT
runs=0 bad=0
for f in "$dir"/*.pickle; do
  for cap in "" 1GiB 2GiB 4GiB 8GiB 12GiB 16GiB 24GiB 32GiB 40GiB 48GiB 64GiB 80GiB 96GiB 128GiB 200GiB; do
    for cmd in replay advise explain "replay --start fresh" "replay --policy keel"; do
      args=(mem $cmd "$f")
      [ -n "$cap" ] && args+=(--capacity "$cap")
      out=$("$keel" "${args[@]}" 2>"$err")
      rc=$?
      runs=$((runs + 1))
      notes=$(printf '%s\n' "$out" | grep -c '^note')
      if { [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ]; } || [ "$notes" -gt 10 ]; then
        bad=$((bad + 1))
        echo "FAIL rc=$rc notes=$notes: keel ${args[*]}: $(head -c 300 "$err")"
      fi
    done
  done
done
echo "mem sweep: $runs runs, $bad failed"
[ "$bad" -eq 0 ]
