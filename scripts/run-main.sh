#!/usr/bin/env bash
# The main job on bundled input (what `make run` shows): which allocator setting would have used
# the least memory on a recorded training run. $1: the keel executable.
set -euo pipefail
keel="$1"
trace=examples/memory/train-varlen.pickle
echo "== keel mem advise $trace"
echo "   (a transformer training run with a different sequence length each step, recorded in"
echo "    PyTorch's snapshot format; regenerate it with: keel mem synth train --steps 4 --out $trace)"
echo
"$keel" mem advise "$trace" --html build/keel-mem-report.html
echo
echo "== keel mem replay $trace --policy keel"
"$keel" mem replay "$trace" --policy keel
echo
echo "HTML report: build/keel-mem-report.html"
