"""Checks that a snapshot pickle written by keel is what PyTorch's own tools expect.

usage: check_snapshot_pickle.py OUT_DIR IN.pickle...

Loads each IN with the standard unpickler (globals refused, as for any untrusted pickle), runs
PyTorch's consistency check torch.cuda._memory_viz.stats(snapshot["segments"]) and the
segments() flame-graph walk, checks the 2.2+ keys, then writes the loaded object back with
Python's own pickler at protocols 2 and 5 (OUT_DIR/NAME.p2.pickle and .p5.pickle, NAME the
input's file name) so that keel's reader can be checked against Python-written output.
Prints one JSON line per input with what it found; exits non-zero on any failure. One
process serves all inputs because importing torch takes seconds.
"""
import io
import json
import os
import pickle
import sys


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} in a snapshot")


def check(src, prefix):
    with open(src, "rb") as f:
        data = f.read()
    snapshot = NoGlobals(io.BytesIO(data)).load()
    assert pickle.loads(data) == snapshot  # the standard unpickler agrees

    segments = snapshot["segments"] if isinstance(snapshot, dict) else snapshot
    stats = _memory_viz.stats(segments)
    flame = _memory_viz.segments(segments, format_flamegraph=lambda lines: lines)
    assert stats["segments"] == len(segments)

    seg_keys = {"device", "address", "total_size", "allocated_size", "active_size",
                "requested_size", "stream", "segment_type", "segment_pool_id",
                "is_expandable", "frames", "blocks"}
    for seg in segments:
        assert set(seg) == seg_keys, set(seg) ^ seg_keys
        assert isinstance(seg["segment_pool_id"], tuple)
        assert seg["segment_type"] in ("large", "small")
        for b in seg["blocks"]:
            assert set(b) == {"address", "size", "requested_size", "state", "frames"}, b.keys()
            for fr in b["frames"]:
                assert set(fr) == {"filename", "line", "name"}
    actions = {}
    if isinstance(snapshot, dict):
        for trace in snapshot["device_traces"]:
            for e in trace:
                actions[e["action"]] = actions.get(e["action"], 0) + 1
                assert ("device_free" in e) == (e["action"] == "oom")
                assert "addr" in e or e["action"] == "oom"
        if "allocator_settings" in snapshot:
            s = snapshot["allocator_settings"]
            assert isinstance(s["garbage_collection_threshold"], float)
            assert isinstance(s["expandable_segments"], bool)
            assert all(isinstance(k, str) for k in s["roundup_power2_divisions"])

    for proto in (2, 5):
        with open(f"{prefix}.p{proto}.pickle", "wb") as f:
            pickle.dump(snapshot, f, protocol=proto)

    print(json.dumps({
        "file": os.path.basename(src),
        "segments": stats["segments"],
        "total_size": stats["total_size"].value,
        "blocks": sum(len(s["blocks"]) for s in segments),
        "flamegraph_lines": flame.count("\n"),
        "actions": actions,
    }))


if __name__ == "__main__":
    from torch.cuda import _memory_viz

    out_dir = sys.argv[1]
    for path in sys.argv[2:]:
        check(path, os.path.join(out_dir, os.path.basename(path)))
