"""keel.perf and keel.gpus: the same documents as keel perf ... / keel gpus ... --json."""

import json
import math

import pytest

import keel
from conftest import SOURCE, cli_error, cli_json

DATA = SOURCE / "tests" / "data" / "perf"


# (CLI arguments after `op KIND` / `explain KIND`, the same as Python arguments)
OPS = [
    ("gemm", ["8192", "8192", "8192", "--dtype", "bf16"], (8192, 8192, 8192), {"dtype": "bf16"}),
    ("gemm", ["512", "1024", "64", "--batch", "8", "--no-tensor", "--gpu", "a100-sxm4-80gb"],
     (512, 1024, 64), {"batch": 8, "no_tensor": True, "gpu": "a100-sxm4-80gb"}),
    ("spmv", ["--rows", "1e6", "--nnz", "1e7", "--dtype", "fp64"], (), {"rows": 1e6, "nnz": 1e7, "dtype": "fp64"}),
    ("spmv", ["--rows", "1000", "--cols", "2000", "--nnz", "30000", "--index-bytes", "8", "--no-x-reuse"], (),
     {"rows": 1000, "cols": 2000, "nnz": 30000, "index_bytes": 8, "no_x_reuse": True}),
    ("conv2d", ["--input", "1x64x56x56", "--out-channels", "64", "--padding", "1"], (),
     {"input": "1x64x56x56", "out_channels": 64, "padding": 1}),
    ("conv2d", ["--input", "8x32x28x28", "--out-channels", "64", "--kernel", "5x3", "--stride", "2",
                "--groups", "2", "--dilation", "2", "--dtype", "fp16"], (),
     {"input": (8, 32, 28, 28), "out_channels": 64, "kernel": (5, 3), "stride": 2, "groups": 2, "dilation": 2,
      "dtype": "fp16"}),
    ("attention", ["--heads", "32", "--seq", "4096", "--flash", "--dtype", "bf16"], (),
     {"heads": 32, "seq": 4096, "flash": True, "dtype": "bf16"}),
    ("attention", ["--batch", "2", "--heads", "32", "--kv-heads", "8", "--seq", "1", "--kv-len", "8192",
                   "--head-dim", "64", "--causal", "--gpu", "rtx-4090"], (),
     {"batch": 2, "heads": 32, "kv_heads": 8, "seq": 1, "kv_len": 8192, "head_dim": 64, "causal": True,
      "gpu": "rtx-4090"}),
    ("elementwise", ["--elements", "1e8"], (), {"elements": 1e8}),
    ("elementwise", ["--elements", "1000", "--inputs", "0", "--outputs", "0", "--flops-per-element", "3"], (),
     {"elements": 1000, "inputs": 0, "outputs": 0, "flops_per_element": 3}),  # no bytes: intensity null
]


@pytest.mark.parametrize("kind,cli_args,mnk,kwargs", OPS)
def test_op_equals_the_cli(keel_exe, kind, cli_args, mnk, kwargs):
    cli = cli_json(keel_exe, "perf", "op", kind, *cli_args)
    py = keel.perf.op(kind, *mnk, **kwargs)
    assert py.to_dict() == cli


@pytest.mark.parametrize("kind,cli_args,mnk,kwargs", OPS)
def test_explain_equals_the_cli(keel_exe, kind, cli_args, mnk, kwargs):
    gpu = kwargs.pop("gpu", "titan-v")
    if "--gpu" in cli_args:
        i = cli_args.index("--gpu")
        cli_args = cli_args[:i] + cli_args[i + 2:]
    cli = cli_json(keel_exe, "perf", "explain", kind, *cli_args, "--gpu", gpu, "--vs", "rtx-2080-ti")
    py = keel.perf.explain(kind, *mnk, gpu=gpu, vs="rtx-2080-ti", **kwargs)
    assert py.to_dict() == cli


def test_explain_spmv_defaults_and_words(keel_exe):
    cli = cli_json(keel_exe, "perf", "explain", "spmv", "--gpu", "titan-v", "--vs", "rtx-2080-ti",
                   "--dtype", "fp64")
    py = keel.perf.explain("spmv", gpu="titan-v", vs="rtx-2080-ti", dtype="fp64")
    assert py.to_dict() == cli
    assert abs(py.time_ratio - 0.944) < 0.01
    assert any("Both are memory-bound" in line for line in py.explanation)
    assert py.a.gpu == "titan-v" and py.b.bound == "memory"


@pytest.mark.parametrize("config", keel.perf.llm_configs())
def test_llm_equals_the_cli_for_every_bundled_config(keel_exe, config):
    cli = cli_json(keel_exe, "perf", "llm", "--config", config)
    assert keel.perf.llm(config).to_dict() == cli
    cli = cli_json(keel_exe, "perf", "llm", "--config", config, "--phase", "decode", "--batch", "16", "--seq",
                   "2048", "--kv-dtype", "fp8", "--flash", "--gpu", "rtx-4090")
    py = keel.perf.llm(config, phase="decode", batch=16, seq=2048, kv_dtype="fp8", flash=True, gpu="rtx-4090")
    assert py.to_dict() == cli


def test_llm_options_and_chart(keel_exe, tmp_path):
    cli = cli_json(keel_exe, "perf", "llm", "--config", "gpt2", "--dtype", "fp32", "--no-tensor", "--gpu", "t4")
    py = keel.perf.llm("gpt2", dtype="fp32", no_tensor=True, gpu="t4")
    assert py.to_dict() == cli
    svg = tmp_path / "llm.svg"
    r = keel.perf.llm("llama-2-7b", svg=svg)
    assert r.params == 6738415616 and svg.read_text().startswith("<svg")
    config = SOURCE / "src" / "perf" / "data" / "configs"
    path = next(iter(sorted(config.glob("*.json"))), None)
    if path is not None:  # a config.json by path
        assert keel.perf.llm(path).to_dict() == cli_json(keel_exe, "perf", "llm", "--config", path)


# The options of keel perf llm beyond the op table: quantization, generation, training and
# parallelism, each the same document as the CLI's.
LLM_OPTIONS = [
    (["--quant", "w4a16"], {"quant": "w4a16"}),
    (["--generate", "256", "--seq", "512"], {"generate": 256, "seq": 512}),
    (["--train", "--optimizer", "sgd-momentum", "--dtype", "fp32"], {"train": True, "optimizer": "sgd-momentum",
                                                                     "dtype": "fp32"}),
    (["--batch", "8", "--tp", "2", "--pp", "2", "--dp", "2", "--link-latency-us", "3"],
     {"batch": 8, "tp": 2, "pp": 2, "dp": 2, "link_latency_us": 3}),
]


@pytest.mark.parametrize("cli_args,kwargs", LLM_OPTIONS)
def test_llm_quant_generation_training_parallel_equal_the_cli(keel_exe, cli_args, kwargs):
    cli = cli_json(keel_exe, "perf", "llm", "--config", "llama-2-7b", *cli_args)
    assert keel.perf.llm("llama-2-7b", **kwargs).to_dict() == cli


def test_llm_expert_parallel_and_a_model_that_does_not_fit(keel_exe):
    cli = cli_json(keel_exe, "perf", "llm", "--config", "mixtral-8x7b", "--batch", "4", "--dp", "4", "--ep", "4")
    assert keel.perf.llm("mixtral-8x7b", batch=4, dp=4, ep=4).to_dict() == cli
    short = keel.perf.llm("mixtral-8x7b")  # bf16 weights on one 80 GB H100
    assert short.fits is False and short.predicted_ms is None
    with pytest.raises(keel.InvalidArgument, match="--ep"):
        keel.perf.llm("mixtral-8x7b", batch=4, dp=2, ep=4)


def test_llm_rows_where_pandas_is_installed():
    pandas = pytest.importorskip("pandas")
    frame = keel.perf.llm("llama-2-7b").to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert {"name", "count", "flops", "bytes", "bound", "time_ms"} <= set(frame.columns)


def test_model_equals_the_cli(keel_exe, tmp_path):
    for path in (DATA / "tiny.onnx", DATA / "resnet50-graph.onnx"):
        assert keel.perf.model(path).to_dict() == cli_json(keel_exe, "perf", "model", path)
    cli = cli_json(keel_exe, "perf", "model", DATA / "tiny.onnx", "--gpu", "rtx-3090", "--no-tensor", "--dim",
                   "batch=4")
    py = keel.perf.model(DATA / "tiny.onnx", gpu="rtx-3090", no_tensor=True, dims={"batch": 4})
    assert py.to_dict() == cli
    assert keel.perf.model(str(DATA / "tiny.onnx"), dims=["batch=4"], gpu="rtx-3090", no_tensor=True) == py
    svg = tmp_path / "model.svg"
    keel.perf.model(DATA / "tiny.onnx", svg=svg)
    assert svg.read_text().startswith("<svg")
    assert keel.perf.model(DATA / "tiny.onnx").macs == 93184


def test_model_depth_equals_the_cli(keel_exe):
    path = DATA / "resnet50-graph.onnx"
    for depth in (0, 1):
        cli = cli_json(keel_exe, "perf", "model", path, "--depth", str(depth))
        assert keel.perf.model(path, depth=depth).to_dict() == cli
    assert keel.perf.model(path, depth=0).to_dict()["tree"]["children"] == []
    with pytest.raises(keel.InvalidArgument, match="--depth"):
        keel.perf.model(path, depth=-2)
    with pytest.raises(TypeError, match="depth"):
        keel.perf.model(path, depth=1.5)


def test_model_dynamic_axes_need_dims_or_assume_one(keel_exe):
    golden = json.loads((DATA / "gpt-block.golden.json").read_text())
    path = DATA / "gpt-block.onnx"
    py = keel.perf.model(path, dims=golden["dims"])
    assert py.macs == golden["macs"]
    args = [a for name, value in golden["dims"].items() for a in ("--dim", f"{name}={value}")]
    assert py.to_dict() == cli_json(keel_exe, "perf", "model", path, *args)
    with pytest.raises(keel.InvalidArgument, match="batch, sequence"):
        keel.perf.model(path)
    assert keel.perf.model(path, assume_one=True).macs == golden["macs_all_one"]
    assert keel.perf.model(path, assume_one=True).to_dict() == cli_json(keel_exe, "perf", "model", path, "--assume-one")


def test_calibrate_writes_a_device_the_models_take(keel_exe, tmp_path):
    device = tmp_path / "here.json"
    doc = keel.perf.calibrate(seconds=0.02, dram_mib=16, out=device, name="here")
    assert doc.gpus[0].name == "here" and doc.gpus[0].tflops.fp32 > 0
    cli = cli_json(keel_exe, "perf", "calibrate", "--seconds", "0.02", "--dram-mib", "16", "--name", "here")
    assert set(doc.to_dict()) == set(cli) and set(doc.gpus[0]) == set(cli["gpus"][0])
    assert json.loads(device.read_text()) == doc.to_dict()
    py = keel.perf.op("gemm", 512, 512, 512, gpu=device)
    assert py.to_dict() == cli_json(keel_exe, "perf", "op", "gemm", "512", "512", "512", "--gpu", device)
    assert keel.perf.model(DATA / "tiny.onnx", gpu=device).gpu == "here"


def test_gpus_list_show_compare_equal_the_cli(keel_exe):
    assert keel.gpus.list().to_dict() == cli_json(keel_exe, "gpus", "list")
    hopper = keel.gpus.list(arch="Hopper")
    assert hopper.to_dict() == cli_json(keel_exe, "gpus", "list", "--arch", "Hopper")
    assert {g.arch for g in hopper.gpus} == {"Hopper"}
    names = keel.gpus.names()
    assert names == [g.name for g in keel.gpus.list().gpus] and len(names) >= 30
    for name in names:
        assert keel.gpus.show(name).to_dict() == cli_json(keel_exe, "gpus", "show", name), name
    assert keel.gpus.show("H100 SXM").name == "h100-sxm"  # names are forgiving
    assert keel.gpus.compare("titan-v", "rtx-2080-ti").to_dict() == cli_json(
        keel_exe, "gpus", "compare", "titan-v", "rtx-2080-ti")


def test_gpus_support_and_pick_equal_the_cli(keel_exe):
    for name, flag, version in (("gtx-1050", "--cuda", "13.0"), ("gtx-1050", "--cuda", "12.4"),
                                ("h100-sxm", "--cudnn", "9.1"), ("gtx-680", "--cudnn", "9.0")):
        py = keel.gpus.support(name, **{flag[2:]: version})
        assert py.to_dict() == cli_json(keel_exe, "gpus", "support", name, flag, version)
    assert keel.gpus.support("gtx-1050", cuda="13.0").supported is False
    unknown = keel.gpus.support("gtx-1050", cudnn="8.7")
    assert unknown.supported is None and unknown.state == "unknown"
    assert unknown.to_dict() == cli_json(keel_exe, "gpus", "support", "gtx-1050", "--cudnn", "8.7")
    wheel = keel.gpus.support("gtx-1050", pytorch="2.8", wheel="cu128")
    assert wheel.supported is False
    assert wheel.to_dict() == cli_json(keel_exe, "gpus", "support", "gtx-1050", "--pytorch", "2.8",
                                       "--wheel", "cu128")
    assert keel.gpus.support("gtx-1080", driver="590").to_dict() == cli_json(
        keel_exe, "gpus", "support", "gtx-1080", "--driver", "590")
    prices = DATA / "prices_eur.csv"
    by_value = keel.gpus.pick(need="fp16", prices=prices, by="value")
    assert by_value.to_dict() == cli_json(keel_exe, "gpus", "pick", "--need", "fp16", "--prices",
                                          str(prices), "--by", "value")
    assert by_value.currency == "EUR" and by_value.ranked[0].name == "rtx-4090"
    for cli_args, kwargs in (
        (["--budget", "2000", "--need", "fp16", "memory=24GiB"], {"budget": 2000, "need": ["fp16", "memory=24GiB"]}),
        (["--budget", "3000", "--need", "fp64"], {"budget": 3000, "need": "fp64"}),
        (["--need", "bf16", "cuda=12.4", "bandwidth=1000", "--top", "20"],
         {"need": ("bf16", "cuda=12.4", "bandwidth=1000"), "top": 20}),
        ([], {}),
    ):
        assert keel.gpus.pick(**kwargs).to_dict() == cli_json(keel_exe, "gpus", "pick", *cli_args), cli_args
    # The RTX 5090's fp16 tensor rate (209.5, derived from NVIDIA's AI TOPS) ranks it first.
    assert [c.name for c in keel.gpus.pick(budget=2000, need=["fp16", "memory=24GiB"]).ranked[:2]] == [
        "rtx-5090", "rtx-4090"]
    pandas = pytest.importorskip("pandas")
    frame = keel.gpus.list().to_pandas()
    assert isinstance(frame, pandas.DataFrame) and "tflops.fp32" in frame.columns


def test_bad_values_raise_the_clis_messages(keel_exe, tmp_path):
    cases = [
        (["perf", "op", "gemm", "0", "1", "1"], lambda: keel.perf.op("gemm", 0, 1, 1)),
        (["perf", "op", "attention", "--heads", "32", "--seq", "4096", "--batch", "nan"],
         lambda: keel.perf.op("attention", heads=32, seq=4096, batch=math.nan)),
        (["perf", "op", "spmv", "--rows", "10", "--nnz", "5", "--dtype", "fp7"],
         lambda: keel.perf.op("spmv", rows=10, nnz=5, dtype="fp7")),
        (["perf", "op", "gemm", "1", "1", "1", "--gpu", "no-such-gpu"],
         lambda: keel.perf.op("gemm", 1, 1, 1, gpu="no-such-gpu")),
        (["perf", "op", "conv2d", "--input", "1x3x224", "--out-channels", "64"],
         lambda: keel.perf.op("conv2d", input="1x3x224", out_channels=64)),
        (["perf", "op", "conv2d", "--input", "1x3x224x224", "--out-channels", "64", "--stride=-1"],
         lambda: keel.perf.op("conv2d", input=(1, 3, 224, 224), out_channels=64, stride=-1)),
        (["perf", "op", "elementwise", "--elements", "10", "--inputs", "inf"],
         lambda: keel.perf.op("elementwise", elements=10, inputs=math.inf)),
        (["perf", "explain", "gemm", "1", "1", "1", "--gpu", "titan-v", "--vs", "titan-z"],
         lambda: keel.perf.explain("gemm", 1, 1, 1, gpu="titan-v", vs="titan-z")),
        (["perf", "llm", "--config", "llama-2-7b", "--seq=-5"], lambda: keel.perf.llm("llama-2-7b", seq=-5)),
        (["perf", "llm", "--config", "no-such-model"], lambda: keel.perf.llm("no-such-model")),
        (["perf", "llm", "--config", "gpt2", "--kv-dtype", "fp5"], lambda: keel.perf.llm("gpt2", kv_dtype="fp5")),
        (["perf", "model", DATA / "tiny.onnx", "--dim", "batch"], lambda: keel.perf.model(DATA / "tiny.onnx",
                                                                                          dims=["batch"])),
        (["perf", "calibrate", "--threads", "0"], lambda: keel.perf.calibrate(threads=0)),
        (["gpus", "show", "nonexistent"], lambda: keel.gpus.show("nonexistent")),
        (["gpus", "support", "gtx-1050"], lambda: keel.gpus.support("gtx-1050")),
        (["gpus", "support", "gtx-1050", "--cuda", "twelve"], lambda: keel.gpus.support("gtx-1050", cuda="twelve")),
        (["gpus", "pick", "--need", "warp-drive"], lambda: keel.gpus.pick(need=["warp-drive"])),
        (["gpus", "pick", "--top", "0"], lambda: keel.gpus.pick(top=0)),
        (["gpus", "pick", "--budget=-1"], lambda: keel.gpus.pick(budget=-1)),
    ]
    for args, call in cases:
        message = cli_error(keel_exe, *args)
        with pytest.raises(keel.InvalidArgument) as e:
            call()
        assert str(e.value) == message, args
    with pytest.raises(ValueError, match="negative"):
        keel.perf.op("conv2d", input="1x3x8x8", out_channels=-4)
    with pytest.raises(keel.InvalidArgument, match="--rows is required"):
        keel.perf.op("spmv", nnz=5)
    with pytest.raises(keel.InvalidArgument, match="gemm needs M N K"):
        keel.perf.op("gemm", 1, 2)
    with pytest.raises(keel.InvalidArgument, match="unknown op 'fft'"):
        keel.perf.op("fft")
    with pytest.raises(keel.InvalidArgument, match="out of range"):
        keel.perf.op("gemm", 1 << 80, 1, 1)  # beyond a double's range of sizes
    with pytest.raises(keel.InvalidArgument, match="excludes"):
        keel.gpus.support("gtx-1050", cuda="12.4", cudnn="9.1")
    with pytest.raises(keel.IOError):
        keel.perf.model(DATA / "no-such.onnx")
    junk = tmp_path / "junk.onnx"
    junk.write_text("not an onnx file at all")
    with pytest.raises(keel.ParseError):
        keel.perf.model(junk)


def test_wrong_types_raise_type_error():
    for call in (
        lambda: keel.perf.op("gemm", "8192", 1, 1),
        lambda: keel.perf.op("gemm", 1, 1, 1, batch="2"),
        lambda: keel.perf.op("gemm", 1, 1, 1, no_tensor="yes"),
        lambda: keel.perf.op("gemm", 1, 1, 1, heads=3),  # not a gemm option
        lambda: keel.perf.op("spmv", 10, rows=10, nnz=5),  # positional sizes are gemm's
        lambda: keel.perf.op("conv2d", input=1.5, out_channels=3),
        lambda: keel.perf.op("conv2d", input="1x3x8x8", out_channels=3.0),
        lambda: keel.perf.op("attention", heads=True, seq=1),
        lambda: keel.perf.op(3),
        lambda: keel.perf.explain("gemm", 1, 1, 1, gpu="t4"),  # no vs
        lambda: keel.perf.llm("gpt2", batch="1"),
        lambda: keel.perf.llm(None),
        lambda: keel.perf.model(3),
        lambda: keel.perf.model(DATA / "tiny.onnx", dims={"batch": 1.5}),
        lambda: keel.gpus.show(3),
        lambda: keel.gpus.pick(need=[1]),
        lambda: keel.gpus.pick(budget="cheap"),
    ):
        with pytest.raises(TypeError):
            call()
