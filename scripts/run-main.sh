#!/usr/bin/env bash
# The main job on bundled input (what `make run` shows). $1: the keel executable.
set -euo pipefail
keel="$1"
echo "== keel --help"
"$keel" --help
