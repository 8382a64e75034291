#!/usr/bin/env bash
# The bad-input sweep of issue 15 as a test: hostile inputs, options and output paths for
# every `keel` command, each run checked for
#   - the contract: exit 2 with exactly one line "keel: ..." on stderr (or, where a case
#     allows it, a correct answer with exit 0) -- never exit 1, never a stack trace;
#   - no signal and no hang: every run has a timeout (KEEL_HOSTILE_TIMEOUT, default 60 s);
#   - bounded memory: the run's peak RSS (GNU time's %M) below KEEL_HOSTILE_MAX_RSS_MB
#     (default 1024);
#   - no output left behind: no 0-byte or half file, no ".NAME.keel-tmp.*" temporary.
# Inputs: /dev/zero, /dev/urandom, /dev/null, a FIFO without a writer, /proc/self/mem, a
# directory, a missing path, an empty file, garbage bytes, a sparse file above the input
# limit, for every file a command reads (and the environment variables that name files).
# Options: every numeric option that `--help` of each command lists, with -1, 2^64, a 23-digit
# number, nan, inf, -inf, 1e400 and a word (KEEL_HOSTILE_OPTION_VALUES=rotate: one of them per
# option, in turn). Capacities far above what the input needs.
# Outputs: /dev/full, a directory, a missing directory, a read-only directory, and two writers
# of one path.
#
# Hook for other suites: every tests/hostile/cases.d/*.sh (and every *.sh in the directories
# named by KEEL_HOSTILE_CASES_DIRS, ':'-separated, and in extra arguments) is sourced after
# the built-in cases. A case file may create fixtures under "$tmp" and calls
#   hostile_case EXPECT [-e NAME=VALUE]... [-o FILE] [-m TEXT] [-t SECONDS] -- KEEL-ARG...
# EXPECT is usage (exit 2, one line on stderr), ok (exit 0) or either; -e sets an environment
# variable for the run, -o sends stdout to FILE, -m requires TEXT in the stderr line, -t
# overrides the timeout. Variables: $keel, $src (the source tree), $tmp (scratch, removed at
# the end), $snapshot, $trace, $onnx (small valid inputs).
#
# Usage: hostile_test.sh KEEL SOURCE_DIR [CASE_DIR...]
set -u
keel=$1
src=$2
shift 2
timeout_s=${KEEL_HOSTILE_TIMEOUT:-60}
max_rss_kb=$((${KEEL_HOSTILE_MAX_RSS_MB:-1024} * 1024))
time_bin=/usr/bin/time
if [ ! -x "$time_bin" ]; then
  echo "hostile: skipped, GNU time ($time_bin) is not installed"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/keel-hostile.XXXXXX")
cleanup() {
  chmod -R u+w "$tmp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

runs=0
failed=0
fail() {
  failed=$((failed + 1))
  echo "FAIL: $*"
}

# Shards (KEEL_HOSTILE_SHARD=I/N, CTest runs the N of them side by side): the sweep is a
# sequence of units, each one case or one block of dependent steps, and shard I runs the units
# whose index is I modulo N. Every shard builds the fixtures. A block of steps that depend on
# one another is `if hostile_unit; then ...; hostile_unit_end; fi`.
IFS=/ read -r shard_i shard_n <<<"${KEEL_HOSTILE_SHARD:-0/1}"
if ! [[ "$shard_i" =~ ^[0-9]+$ && "$shard_n" =~ ^[1-9][0-9]*$ ]] || [ "$shard_i" -ge "$shard_n" ]; then
  echo "hostile: KEEL_HOSTILE_SHARD must be I/N with 0 <= I < N, not '${KEEL_HOSTILE_SHARD:-}'"
  exit 2
fi
units=0
in_unit=0
hostile_mine() {
  units=$((units + 1))
  [ $(((units - 1) % shard_n)) -eq "$shard_i" ]
}
hostile_unit() {
  hostile_mine || return 1
  in_unit=1
}
hostile_unit_end() { in_unit=0; }

# hostile_case EXPECT [-e NAME=VALUE]... [-o FILE] [-m TEXT] [-t SECONDS] -- KEEL-ARG...
hostile_case() {
  if [ "$in_unit" -eq 0 ]; then hostile_mine || return 0; fi
  local expect=$1
  shift
  local envs=() stdout="" message="" limit=$timeout_s
  while [ $# -gt 0 ]; do
    case $1 in
      -e) envs+=("$2"); shift 2 ;;
      -o) stdout=$2; shift 2 ;;
      -m) message=$2; shift 2 ;;
      -t) limit=$2; shift 2 ;;
      --) shift; break ;;
      *) echo "hostile_case: unknown flag '$1'"; exit 2 ;;
    esac
  done
  runs=$((runs + 1))
  local out=$tmp/.stdout err=$tmp/.stderr rss=$tmp/.rss
  [ -n "$stdout" ] && out=$stdout
  rm -f "$rss"
  # ulimit -f: a command that streams without end dies of SIGXFSZ (a signal: a failure)
  # instead of filling the disk before its timeout.
  (
    ulimit -f $((64 * 1024))
    exec env "${envs[@]}" timeout -k 5 "$limit" "$time_bin" -f %M -o "$rss" "$keel" "$@"
  ) >"$out" 2>"$err" </dev/null
  local rc=$?
  local what="keel $*"
  [ ${#envs[@]} -gt 0 ] && what="${envs[*]} $what"
  [ -n "$stdout" ] && what="$what >$stdout"
  local kb
  kb=$(tail -n 1 "$rss" 2>/dev/null)
  local lines
  lines=$(wc -l <"$err")
  local first
  first=$(head -c 300 "$err" | head -n 3 | tr '\n' '|')
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "hang (no exit within ${limit} s): $what"
    return
  fi
  if [ "$rc" -gt 128 ]; then
    fail "signal $((rc - 128)): $what: $first"
    return
  fi
  if [[ "$kb" =~ ^[0-9]+$ ]] && [ "$kb" -gt "$max_rss_kb" ]; then
    fail "peak RSS $((kb / 1024)) MiB > $((max_rss_kb / 1024)) MiB: $what"
  fi
  local one_line=0
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && head -c 6 "$err" | grep -q '^keel: '; then
    one_line=1
  fi
  case $expect in
    usage)
      if [ "$one_line" -ne 1 ]; then
        fail "expected exit 2 and one line, got exit $rc, $lines lines: $what: $first"
        return
      fi ;;
    ok)
      if [ "$rc" -ne 0 ]; then
        fail "expected exit 0, got exit $rc: $what: $first"
        return
      fi ;;
    either)
      if [ "$rc" -ne 0 ] && [ "$one_line" -ne 1 ]; then
        fail "expected exit 0, or exit 2 and one line; got exit $rc, $lines lines: $what: $first"
        return
      fi ;;
    *) echo "hostile_case: unknown expectation '$expect'"; exit 2 ;;
  esac
  if [ -n "$message" ] && [ "$rc" -ne 0 ] && ! grep -qF -- "$message" "$err"; then
    fail "stderr does not mention '$message': $what: $first"
  fi
}

# ---- fixtures ------------------------------------------------------------------------------
snapshot=$src/examples/memory/train-varlen.pickle
onnx=$src/tests/data/perf/tiny.onnx
trace=$tmp/trace.jsonl
head -n 50 "$src/examples/kv/mooncake-synthetic.jsonl" >"$trace"
fifo=$tmp/fifo
mkfifo "$fifo"
mkdir "$tmp/dir" "$tmp/readonly"
chmod 555 "$tmp/readonly"
: >"$tmp/empty"
head -c 4096 /dev/urandom >"$tmp/garbage.bin"
printf '{"timestamp": 1, "input_length": \n not json at all\n' >"$tmp/garbage.txt"
printf '{"hidden_size": "lots", "num_hidden_layers": -3}\n' >"$tmp/garbage.json"
# Sparse: above the 8 GiB default input limit without taking any disk.
truncate -s 9G "$tmp/sparse-9g" 2>/dev/null || : >"$tmp/sparse-9g"
truncate -s 2M "$tmp/sparse-2m"

special_inputs=(/dev/zero /dev/urandom /dev/null "$fifo" /proc/self/mem "$tmp/dir"
                "$tmp/no-such-file" "$tmp/sparse-9g")
garbage_inputs=("$tmp/empty" "$tmp/garbage.bin" "$tmp/garbage.txt" "$tmp/garbage.json")

# ---- 1. special files and garbage for every file a command reads -----------------------
readers=(
  "mem replay @"
  "mem advise @"
  "mem explain @"
  "mem compare @ $snapshot"
  "mem compare $snapshot @"
  "mem bench --trace @ --ops 10 --repeat 1 --allocators glibc"
  "kv replay @"
  "kv sweep @ --no-svg"
  "perf model @"
  "perf llm --config @"
  "perf op gemm 64 64 64 --gpu @"
)
for r in "${readers[@]}"; do
  for f in "${special_inputs[@]}" "${garbage_inputs[@]}"; do
    read -r -a words <<<"${r//@/$f}"
    hostile_case usage -- "${words[@]}"
  done
done
# The input limit, from the environment: a file above it is refused before it is read.
hostile_case usage -e KEEL_MAX_INPUT_BYTES=1MiB -m "input limit" -- kv replay "$tmp/sparse-2m"
hostile_case usage -e KEEL_MAX_INPUT_BYTES=1MiB -m "input limit" -- perf model "$tmp/sparse-2m"
hostile_case usage -e KEEL_MAX_INPUT_BYTES=1MiB -m "input limit" -- mem replay "$tmp/sparse-2m"
hostile_case usage -e KEEL_MAX_INPUT_BYTES=lots -m KEEL_MAX_INPUT_BYTES -- kv replay "$trace"
hostile_case usage -e KEEL_MAX_INPUT_BYTES=0 -m KEEL_MAX_INPUT_BYTES -- kv replay "$trace"
hostile_case ok -e KEEL_MAX_INPUT_BYTES=64MiB -- kv replay "$trace"

# ---- 2. files named by the environment (random's NVIDIA data) ----------------------------
for f in "${special_inputs[@]}" "$tmp/garbage.bin" "$tmp/garbage.txt"; do
  hostile_case usage -e KEEL_MTGP32_PARAMS="$f" -- rand raw --generator mtgp32 --count 8
  hostile_case usage -e KEEL_ERFCINV_COEFFICIENTS="$f" -- \
    rand normal_double --generator sobol32 --count 8
  hostile_case either -e KEEL_SOBOL_SCRAMBLE_TABLES="$f" -- \
    rand raw --generator scrambled_sobol32 --count 8
done

# ---- 3. every numeric option of every command --------------------------------------------
# Each command with the arguments that make it otherwise valid; its numeric options come
# from its --help ("--name INT", "-n,--iters INT:[1, 1000000]", "--seq FLOAT:...").
commands=(
  "mem replay $snapshot"
  "mem advise $snapshot"
  "mem explain $snapshot"
  "mem compare $snapshot $snapshot"
  "mem synth train --out $tmp/synth.json"
  "mem bench --allocators glibc --ops 10 --repeat 1"
  "kv replay $trace"
  "kv sweep $trace --no-svg --capacities 1M"
  "perf op gemm 64 64 64"
  "perf op spmv --rows 100 --nnz 1000"
  "perf op conv2d --input 1x3x8x8 --out-channels 4"
  "perf op attention --heads 2 --seq 16"
  "perf op elementwise --elements 100"
  "perf explain gemm 64 64 64 --gpu h100-sxm --vs a100-sxm4-80gb"
  "perf explain spmv --gpu h100-sxm --vs a100-sxm4-80gb"
  "perf explain conv2d --input 1x3x8x8 --out-channels 4 --gpu h100-sxm --vs a100-sxm4-80gb"
  "perf explain attention --heads 2 --seq 16 --gpu h100-sxm --vs a100-sxm4-80gb"
  "perf explain elementwise --elements 100 --gpu h100-sxm --vs a100-sxm4-80gb"
  "perf llm --config gpt2"
  "perf model $onnx"
  "perf calibrate --seconds 0.001 --dram-mib 1"
  "gpus pick"
  "rand raw"
  "rand uniform"
  "rand uniform_double"
  "rand normal"
  "rand normal_double"
  "rand log_normal"
  "rand log_normal_double"
  "rand poisson"
  "rand verify"
  "rand bench --count 16 --repeats 1 --generator philox4_32_10"
  "rand test --samples 1000"
  "comm launch -n 1 -- true"
  "comm verify"
  "comm bench"
  "comm faults"
  "serve $tmp/no-such-dir"
  "serve bench http://127.0.0.1:9 --model m --duration 0.1 --warmup 0"
)
numeric_options=0
for c in "${commands[@]}"; do
  read -r -a base <<<"$c"
  # The subcommand path is the words before the first argument that is a path or an option.
  path=()
  for w in "${base[@]}"; do
    case $w in -* | */* | [0-9]*) break ;; esac
    path+=("$w")
  done
  help=$("$keel" "${path[@]}" --help 2>&1)
  while read -r names type; do
    [ -z "$names" ] && continue
    option=${names##*,}
    numeric_options=$((numeric_options + 1))
    values=(-1 18446744073709551616 99999999999999999999999 nan inf -inf 1e400 many)
    # Sanitizer builds: one value per option, in turn, so that every value still runs there;
    # the release sweep runs all of them (the range check that refuses them is shared code).
    if [ "${KEEL_HOSTILE_OPTION_VALUES:-all}" = rotate ]; then
      values=("${values[$((numeric_options % ${#values[@]}))]}")
    fi
    for v in "${values[@]}"; do
      expect=usage
      case "$type:$v" in
        INT:-1 | FLOAT:-1 | FLOAT:18446744073709551616 | FLOAT:99999999999999999999999) expect=either ;;
      esac
      # Insert the option right after the subcommand path: "--" lists stay last.
      hostile_case $expect -m "$option" -- "${path[@]}" "$option" "$v" "${base[@]:${#path[@]}}"
    done
  done < <(printf '%s\n' "$help" | sed -nE 's/^ +((-[A-Za-z0-9],)?--[A-Za-z0-9_-]+) (U?INT|FLOAT)\b.*/\1 \3/p' |
           sed -E 's/ UINT$/ UINT/')
done
if [ "$numeric_options" -lt 60 ]; then
  fail "only $numeric_options numeric options found in --help (the help format changed?)"
fi

# ---- 4. capacities far beyond what the input uses ------------------------------------------
for cap in 10G 1Gblocks 999999999999blocks 999999999G; do
  hostile_case either -- kv replay "$trace" --capacity "$cap"
  hostile_case either -- kv replay "$trace" --capacity "$cap" --hold --policy s3fifo
done
hostile_case ok -- kv sweep "$trace" --no-svg --capacities 1G,1Gblocks,10Gblocks
hostile_case usage -m capacity -- kv replay "$trace" --capacity 0
hostile_case usage -m capacity -- kv replay "$trace" --capacity nan
hostile_case usage -m capacity -- kv replay "$trace" --capacity -5
hostile_case usage -m capacity -- mem replay "$snapshot" --capacity 0
hostile_case usage -m capacity -- mem advise "$snapshot" --capacity 0
hostile_case usage -m capacity -- mem explain "$snapshot" --capacity 0
hostile_case usage -m capacity -- mem bench --allocators glibc --ops 10 --capacity 0
hostile_case usage -m capacity -- mem bench --allocators glibc --ops 10 --capacity 1PiB
hostile_case usage -m capacity -- mem bench --allocators glibc --ops 10 --capacity -1
hostile_case usage -- comm bench -e 1PiB
hostile_case usage -- comm bench -b 99999999999999999999999
hostile_case usage -- comm verify --max-bytes 1PiB
hostile_case usage -- perf op conv2d --input -1x3x8x8 --out-channels 4
hostile_case usage -- perf op conv2d --input 1x3x99999999999999999999x8 --out-channels 4
hostile_case usage -- perf model "$onnx" --dim batch=-1
hostile_case usage -- gpus pick --need bandwidth=nan
hostile_case usage -- gpus pick --need bandwidth=inf
hostile_case usage -- gpus pick --need memory=-1G

# ---- 5. outputs that cannot be written -----------------------------------------------------
outputs=(/dev/full "$tmp/dir" "$tmp/no-such-dir/out" "$tmp/readonly/out")
for o in "${outputs[@]}"; do
  # A read-only directory stops everyone but root: then the file is written (exit 0).
  expect=usage
  [ "$o" = "$tmp/readonly/out" ] && [ "$(id -u)" -eq 0 ] && expect=ok
  hostile_case $expect -- kv sweep "$trace" --capacities 1M --svg "$o"
  hostile_case $expect -- perf llm --config gpt2 --svg "$o"
  hostile_case $expect -- perf model "$onnx" --svg "$o"
  hostile_case $expect -- perf calibrate --seconds 0.001 --dram-mib 1 --out "$o"
  hostile_case $expect -- rand raw --count 100000 --out "$o"
  hostile_case $expect -- rand raw --count 100000 --format npy --out "$o"
  hostile_case $expect -- mem synth train --out "$o"
  hostile_case $expect -- mem replay "$snapshot" --html "$o"
  hostile_case $expect -- mem advise "$snapshot" --html "$o"
done
hostile_case usage -m "No space left on device" -- kv sweep "$trace" --capacities 1M --svg /dev/full
hostile_case usage -m "No space left on device" -- rand raw --count 1000000 --out /dev/full
hostile_case usage -m "write" -o /dev/full -- rand raw --count 1000000
hostile_case ok -- rand raw --count 1000 --out /dev/null
# A failed write leaves the old file whole.
if hostile_unit; then
  printf 'old\n' >"$tmp/keep.svg"
  hostile_case usage -- kv sweep "$trace" --capacities 1M --policies nosuch --svg "$tmp/keep.svg"
  [ "$(cat "$tmp/keep.svg")" = "old" ] || fail "a failed kv sweep changed its --svg file"
  hostile_unit_end
fi

# Two writers of one path: each renames a whole file, the last one wins.
if hostile_unit; then
  for i in 1 2 3; do
    "$keel" kv sweep "$trace" --capacities 1M,2M --svg "$tmp/race.svg" >/dev/null 2>&1 &
    "$keel" kv sweep "$trace" --capacities 1M --svg "$tmp/race.svg" >/dev/null 2>&1 &
    wait
    runs=$((runs + 2))
    tail -c 7 "$tmp/race.svg" | grep -q '</svg>' ||
      fail "two writers of one --svg left a partial file"
  done
  hostile_unit_end
fi

# ---- 6. cases of other suites ----------------------------------------------------------------
case_dirs=("$src/tests/hostile/cases.d" "$@")
IFS=: read -r -a more <<<"${KEEL_HOSTILE_CASES_DIRS:-}"
case_dirs+=("${more[@]}")
for d in "${case_dirs[@]}"; do
  [ -d "$d" ] || continue
  for f in "$d"/*.sh; do
    [ -f "$f" ] || continue
    # shellcheck source=/dev/null
    . "$f"
  done
done

# ---- no temporaries or partial outputs left --------------------------------------------------
leftovers=$(find "$tmp" -name '.*.keel-tmp.*' 2>/dev/null)
[ -z "$leftovers" ] || fail "temporaries left behind: $leftovers"
for f in "$tmp/readonly/out" "$tmp/no-such-dir/out"; do
  if [ -e "$f" ] && [ ! -s "$f" ]; then fail "a 0-byte output was left at $f"; fi
done

echo "hostile: shard $shard_i/$shard_n: $runs runs ($numeric_options numeric options), $failed failed"
[ "$failed" -eq 0 ]
