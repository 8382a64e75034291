# kv: traces that are valid JSON lines but not valid traces, found by keel_fuzz_kv_trace
# (docs/kv.md). Sourced by hostile_test.sh (see README.md here).
printf '{"timestamp": 1e400, "input_length": 512, "hash_ids": [1]}\n' >"$tmp/kv-huge-number.jsonl"
printf '{"timestamp": 0, "input_length": 1024, "hash_ids": [2, 0]}\n{"timestamp": 1, "input_length": 1024, "hash_ids": [0, 4]}\n' \
  >"$tmp/kv-two-parents.jsonl"
printf '{"timestamp": 0, "input_length": 1536, "hash_ids": [7, 7, 7]}\n' >"$tmp/kv-self-parent.jsonl"
printf '{"timestamp": 0, "input_length": 512, "hash_ids": [1], "x": "\\ud800"}\n' >"$tmp/kv-surrogate.jsonl"
printf '{"timestamp": 0, "input_length": 512, "hash_ids": [1], "x": "\xff"}\n' >"$tmp/kv-not-utf8.jsonl"
printf '{"timestamp": 9007199254740993, "input_length": 512, "hash_ids": [1]}\n' >"$tmp/kv-2p53.jsonl"
for f in huge-number two-parents self-parent surrogate not-utf8 2p53; do
  hostile_case usage -m "kv-$f.jsonl:" -- kv replay "$tmp/kv-$f.jsonl"
  hostile_case usage -m "kv-$f.jsonl:" -- kv replay "$tmp/kv-$f.jsonl" --index radix --hold
done
