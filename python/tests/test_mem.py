"""keel.mem: the same documents as keel mem --json, snapshots from paths, bytes and dicts."""

import json
import pickle

import pytest

import keel
from conftest import EXAMPLE, run_cli


def without_times(doc):
    if isinstance(doc, dict):
        return {k: without_times(v) for k, v in doc.items() if k != "elapsed_ms"}
    if isinstance(doc, list):
        return [without_times(v) for v in doc]
    return doc


def test_replay_equals_the_cli_on_every_shared_trace(keel_exe, traces):
    for path in traces:
        cli = run_cli(keel_exe, "mem", "replay", path, "--json")
        assert cli.returncode == 0, cli.stderr
        py = keel.mem.replay(str(path))
        assert without_times(py.to_dict()) == without_times(json.loads(cli.stdout)), path.name


def test_advise_and_explain_equal_the_cli(keel_exe):
    for command, call in (("advise", keel.mem.advise), ("explain", keel.mem.explain)):
        cli = run_cli(keel_exe, "mem", command, EXAMPLE, "--json", "--capacity", "5.5GiB")
        assert cli.returncode == 0, cli.stderr
        py = call(str(EXAMPLE), capacity="5.5GiB")
        assert without_times(py.to_dict()) == without_times(json.loads(cli.stdout))


def test_results_read_as_attributes():
    r = keel.mem.replay(EXAMPLE)
    d = r.devices[0]
    assert d.peak_reserved == r["devices"][0]["peak_reserved"]
    assert d.fidelity.exact is True
    with pytest.raises(AttributeError):
        d.no_such_field
    a = keel.mem.advise(EXAMPLE)
    assert a.devices[0].modes[0].mode == "window"
    assert a.devices[0].recommendation.steps[0].kind == "shell"


def test_to_pandas_where_pandas_is_installed():
    pandas = pytest.importorskip("pandas")
    frame = keel.mem.advise(EXAMPLE).to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert {"device", "mode", "rank", "label", "peak_reserved", "saving"} <= set(frame.columns)
    assert (frame["saving"] == frame["peak_reserved"].rsub(frame["saving"] + frame["peak_reserved"])).all()


def test_a_snapshot_from_bytes_and_from_the_dict_pytorch_returns(traces):
    path = next(p for p in traces if p.name.startswith("cs336a2kk-ctx128"))
    data = path.read_bytes()
    from_path = keel.mem.replay(path).to_dict()
    from_bytes = keel.mem.replay(keel.mem.load_snapshot(data, name=str(path))).to_dict()
    assert without_times(from_bytes) == without_times(from_path)

    class NoGlobals(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError("no globals")

    as_dict = NoGlobals(open(path, "rb")).load()
    snap = keel.mem.load_snapshot(as_dict, name=str(path))
    assert snap.segments == len(as_dict["segments"])
    assert without_times(keel.mem.replay(snap).to_dict()) == without_times(from_path)


def test_bad_snapshot_objects_raise_keel_errors():
    with pytest.raises(keel.ParseError):
        keel.mem.load_snapshot({"segments": "not a list"})
    with pytest.raises(keel.InvalidArgument):
        keel.mem.load_snapshot({"segments": [object()]})
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(keel.InvalidArgument):
        keel.mem.load_snapshot({"segments": cyclic})
    with pytest.raises(keel.InvalidArgument):
        keel.mem.load_snapshot({"segments": [], "x": 1 << 70})
    with pytest.raises(keel.ParseError):
        keel.mem.load_snapshot(b"\x80\x04garbage")
    with pytest.raises(keel.IOError):
        keel.mem.load_snapshot("/no/such/file.pickle")
    with pytest.raises(TypeError):
        keel.mem.load_snapshot(3.5)
    with pytest.raises(ValueError):  # keel.InvalidArgument is a ValueError
        keel.mem.replay(EXAMPLE, device=7)
    with pytest.raises(ValueError):
        keel.mem.replay(EXAMPLE, capacity=-1)


def test_the_caching_allocator_speaks_pytorchs_stat_names():
    a = keel.mem.CachingAllocator("sim")
    x = a.allocate(3 << 20)
    y = a.allocate(100)
    stats = a.memory_stats()
    assert stats["allocation.all.current"] == 2
    assert stats["allocated_bytes.small_pool.current"] == 512
    assert stats["segment.large_pool.current"] == 1
    snap = a.memory_snapshot()
    assert {s["segment_type"] for s in snap["segments"]} == {"small", "large"}
    a.free(x)
    a.free(y)
    a.empty_cache()
    assert a.memory_stats()["reserved_bytes.all.current"] == 0
    assert a.check_invariants() == ""
    with pytest.raises(keel.InvalidArgument):
        a.allocate(-1)
    with pytest.raises(MemoryError):
        keel.mem.CachingAllocator("sim", capacity=1 << 20).allocate(4 << 20)
    with pytest.raises(ValueError):
        keel.mem.CachingAllocator("sim", settings="expandable_segments:yes")
    host = keel.mem.CachingAllocator("host", settings="expandable_segments:True")
    host.free(host.allocate(5 << 20))
    assert host.check_invariants() == ""


def test_report_html(tmp_path):
    out = tmp_path / "report.html"
    keel.mem.report_html(EXAMPLE, out)
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and "keel-report-data" in text
