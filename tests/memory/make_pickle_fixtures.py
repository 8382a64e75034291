"""Writes the small golden pickles in tests/data/memory/ that pickle_test.cpp reads.

Run with Debian's python3 from the repository root:  python3 tests/memory/make_pickle_fixtures.py
The files are committed; rerun only to change them (pickle output is deterministic).
"""
import collections
import os
import pickle

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "memory")

shared = ["shared", 1]
VALUES = {
    "none": None,
    "true": True,
    "false": False,
    "ints": [0, 1, 255, 256, 65535, 65536, -1, -256, 2**31 - 1, -2**31, 2**31, -2**31 - 1,
             2**63 - 1, -2**63, 2**63, 2**64 - 1],
    "float": 0.8,
    "neg_float": -1.5e-300,
    "str": "héllo wörld ✓ 𝔘",
    "empty_str": "",
    "long_str": "x" * 300,
    "bytes": b"\x00\x01\xff",
    "tuple": (1, "two", 3.0),
    "pair": (0, 0),
    "empty": ([], {}, ()),
    "nested": {"a": [{"b": [1, 2, {"c": None}]}]},
    "shared": [shared, shared, shared],
    "big_list": list(range(2500)),
    "big_dict": {str(i): i for i in range(1200)},
}

# A protocol 2 file written with a GLOBAL (what pickling an OrderedDict produces), and a
# protocol 4 one with STACK_GLOBAL + REDUCE: both must be refused.
EVIL_P2 = pickle.dumps(collections.OrderedDict(a=1), protocol=2)


class Reduce:
    def __reduce__(self):
        return (collections.OrderedDict, ())


EVIL_P4 = pickle.dumps({"x": Reduce()}, protocol=4)

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for proto in (2, 3, 4, 5):
        values = dict(VALUES)
        if proto == 2:
            del values["bytes"]  # protocol 2 writes bytes as a codecs.encode REDUCE
        with open(os.path.join(OUT, f"values_p{proto}.pickle"), "wb") as f:
            pickle.dump(values, f, protocol=proto)
    with open(os.path.join(OUT, "evil_global_p2.pickle"), "wb") as f:
        f.write(EVIL_P2)
    with open(os.path.join(OUT, "evil_reduce_p4.pickle"), "wb") as f:
        f.write(EVIL_P4)

# The plain segment list of torch.cuda.memory_snapshot() as PyTorch 1.13 wrote it: no
# block addresses, `history` with real_size and frames, no requested_size.
FR = [{"filename": "train.py", "line": 12, "name": "step"},
      {"filename": "model.py", "line": 40, "name": "forward"}]
SEGMENT_LIST_113 = [
    {"device": 0, "address": 139900000000000, "total_size": 20971520, "allocated_size": 8388608,
     "active_size": 8388608, "stream": 0, "segment_type": "large",
     "blocks": [
         {"size": 8388608, "state": "active_allocated",
          "history": [{"addr": 139900000000000, "real_size": 8000000, "frames": FR}]},
         {"size": 12582912, "state": "inactive", "history": []}]},
    {"device": 0, "address": 139900100000000, "total_size": 2097152, "allocated_size": 512,
     "active_size": 512, "stream": 94000000000000, "segment_type": "small",
     "blocks": [
         {"size": 512, "state": "active_allocated",
          "history": [{"addr": 139900100000000, "real_size": 100, "frames": []}]},
         {"size": 2096640, "state": "inactive"}]},
]

# A 2.2+ snapshot with the rarer trace actions: an OOM (device_free instead of addr),
# expandable-segment map/unmap, a user annotation, and an entry with no frames.
GiB = 1 << 30
VARIANTS = {
    "segments": [
        {"device": 1, "address": 1 << 44, "total_size": 2 * GiB, "allocated_size": GiB,
         "active_size": GiB, "requested_size": GiB - 1000, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "is_expandable": True, "frames": FR,
         "blocks": [
             {"address": 1 << 44, "size": GiB, "requested_size": GiB - 1000,
              "state": "active_allocated", "frames": FR},
             {"address": (1 << 44) + GiB, "size": GiB, "requested_size": 0, "state": "inactive",
              "frames": []}]}],
    "device_traces": [[], [
        {"action": "segment_map", "addr": 1 << 44, "size": 2 * GiB, "stream": 0,
         "time_us": 10, "frames": FR},
        {"action": "alloc", "addr": 1 << 44, "size": GiB - 1000, "stream": 0, "time_us": 11,
         "frames": FR, "compile_context": "N/A", "user_metadata": ""},
        {"action": "oom", "device_free": 123456789, "size": 3 * GiB, "stream": 0,
         "time_us": 12, "frames": FR},
        {"action": "user_defined", "addr": 0, "size": 0, "stream": 0, "time_us": 13},
        {"action": "segment_unmap", "addr": (1 << 44) + GiB, "size": GiB, "stream": 0,
         "time_us": 14, "frames": []},
    ]],
    "allocator_settings": {
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,roundup_power2_divisions:[256:1,>:4]",
        "max_split_size": -1, "garbage_collection_threshold": 0.6, "expandable_segments": True,
        "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "roundup_power2_divisions": {str(1 << i): (1 if i <= 8 else 4) for i in range(16)},
        "some_future_key": [1, 2, 3]},
    "external_annotations": [{"stage": "START", "name": "x", "device": 1, "time_us": 9}],
}

if __name__ == "__main__":
    with open(os.path.join(OUT, "segment_list_1_13.pickle"), "wb") as f:
        pickle.dump(SEGMENT_LIST_113, f, protocol=2)
    with open(os.path.join(OUT, "variants_2_6.pickle"), "wb") as f:
        pickle.dump(VARIANTS, f, protocol=4)
    import json
    with open(os.path.join(OUT, "variants_2_6.json"), "w") as f:
        json.dump(VARIANTS, f, indent=1)
