# memory: hostile snapshots after parsing (issue 15, items 2, 3 and 8): memo bombs, sizes near
# 2^64, blocks that do not tile, recorded settings --conf refuses. The pickles are written by
# Python's own pickle module, which shares repeated objects through its memo as PyTorch does.
# Sourced by hostile_test.sh (see README.md here).

hostile_python=${KEEL_PYTHON:-python3}
if command -v "$hostile_python" >/dev/null 2>&1; then
  mkdir -p "$tmp/pickles"
  "$hostile_python" - "$tmp/pickles" <<'PY'
import os, pickle, sys
out = sys.argv[1]
MiB, base = 1 << 20, 1 << 40
def dump(name, obj):
    with open(os.path.join(out, name), "wb") as f:
        pickle.dump(obj, f, protocol=4)
def seg(addr, total, blocks):
    return {"device": 0, "address": addr, "total_size": total, "stream": 0,
            "segment_type": "large", "blocks": blocks}
def alloc(addr, size, t):
    return {"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t}
# Billion laughs: one segment referenced n times, each holding n references to one block
# (80 KB for n = 20,000 wanted > 20 GB; 8 KB for n = 2,000 took 196 MB and 25 s under ASan).
for n, name in [(20000, "laughs-80k"), (2000, "laughs-8k")]:
    block = {"size": 512, "state": "active_allocated"}
    dump(name + ".pickle", {"segments": [seg(1 << 30, 512 * n, [block] * n)] * n,
                            "device_traces": [[]]})
free2m = [{"address": base, "size": 2 * MiB, "requested_size": 0, "state": "inactive"}]
# A replayed 2^64-1 request was "served" by a 2 MiB segment.
dump("wrapped-request.pickle", {"segments": [seg(base, 2 * MiB, free2m)],
                                "device_traces": [[alloc(base, 2**64 - 1, 1)]]})
dump("huge-segment.pickle", {"segments": [seg(base, 2**64 - 2 * MiB, free2m)],
                             "device_traces": [[]]})
# Three allocations of the largest size a device may have overflowed stat::increase.
dump("three-huge.pickle", {"segments": [], "device_traces": [[
    alloc(base + (i << 20), 1 << 62, i) for i in range(3)]]})
# Overlapping blocks printed "17179869184.00 GiB rounding inside blocks".
overlap = [{"address": base, "size": 8 * MiB, "requested_size": 8 * MiB,
            "state": "active_allocated"},
           {"address": base + 4 * MiB, "size": 16 * MiB, "requested_size": 16 * MiB,
            "state": "active_allocated"}]
dump("untiled.pickle", {"segments": [seg(base, 20 * MiB, overlap)],
                        "device_traces": [[alloc(base + 10 * MiB, 4096, 1)]]})
# Recorded settings that --conf refuses.
def settings(**kw):
    s = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
         "garbage_collection_threshold": 0.0, "expandable_segments": False,
         "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}
    s.update(kw)
    return {"segments": [seg(base, 2 * MiB, free2m)],
            "device_traces": [[alloc(base, 4096, 1)]], "allocator_settings": s}
dump("gc-threshold-5.pickle", settings(garbage_collection_threshold=5.0))
dump("conf-bogus.pickle", settings(PYTORCH_CUDA_ALLOC_CONF="bogus:::"))
PY
  p=$tmp/pickles
  for c in replay advise explain; do
    hostile_case usage -m budget -- mem "$c" "$p/laughs-80k.pickle"
    hostile_case usage -m budget -- mem "$c" "$p/laughs-8k.pickle"
    hostile_case usage -m "larger than any device" -- mem "$c" "$p/wrapped-request.pickle"
    hostile_case usage -m "total_size" -- mem "$c" "$p/huge-segment.pickle"
    hostile_case ok -- mem "$c" "$p/three-huge.pickle"
    hostile_case usage -m "tile" -- mem "$c" "$p/untiled.pickle"
    hostile_case usage -m garbage_collection_threshold -- mem "$c" "$p/gc-threshold-5.pickle"
    hostile_case usage -m bogus -- mem "$c" "$p/conf-bogus.pickle"
  done
  hostile_case usage -- mem replay "$snapshot" --conf garbage_collection_threshold:5.0
  hostile_case usage -- mem replay "$snapshot" --conf "bogus:::"
  hostile_case usage -m "larger than any device" -- mem compare "$snapshot" "$p/wrapped-request.pickle"
  hostile_case usage -m budget -- mem bench --trace "$p/laughs-8k.pickle" --ops 10 --repeat 1 \
    --allocators glibc
else
  echo "hostile: no $hostile_python, the snapshot cases are skipped"
fi
