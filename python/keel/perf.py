"""keel.perf — the roofline performance model: kernels, LLMs and ONNX graphs on a GPU.

    keel.perf.op("gemm", 8192, 8192, 8192, dtype="bf16", gpu="h100-sxm").predicted_ms
    keel.perf.op("spmv", rows=1e6, nnz=1e7, dtype="fp64").bound          # "memory"
    keel.perf.explain("spmv", gpu="titan-v", vs="rtx-2080-ti", dtype="fp64").explanation
    keel.perf.llm("llama-2-7b", seq=2048, gpu="h100-sxm").to_pandas()    # a row per op
    keel.perf.model("resnet50.onnx", dims={"batch": 8}).macs

Each function mirrors a `keel perf` subcommand and returns its `--json` document, field for
field (keel.perf.Result: attribute access, .to_dict(), .to_pandas()). Options are the CLI's,
as keywords with underscores (--kv-heads: kv_heads, --no-tensor: no_tensor=True); an option
the kernel does not take is a TypeError, a bad value a keel.InvalidArgument with the CLI's
message. gpu is a name from keel.gpus.names() or a device file from calibrate(out=...).
"""

import os

from ._keel import perf as _perf
from ._result import Result, _scalars

__all__ = ["op", "explain", "llm", "model", "calibrate", "op_kinds", "llm_configs", "Result"]

op_kinds = _perf.op_kinds
llm_configs = _perf.llm_configs


class LlmResult(Result):
    """keel perf llm's document: a row per op (layer)."""

    __slots__ = ()

    def _rows(self):
        return [_scalars(layer) for layer in self._data["layers"]]


class ModelResult(Result):
    """keel perf model's document: a row per graph node."""

    __slots__ = ()

    def _rows(self):
        return [_scalars(node) for node in self._data["nodes"]]


def _device(gpu):
    return os.fspath(gpu) if isinstance(gpu, os.PathLike) else gpu


def _optional_path(path):
    return None if path is None else os.fspath(path)


def op(kind, *mnk, gpu="h100-sxm", dtype="fp32", no_tensor=False, **shape):
    """The roofline of one kernel: keel perf op KIND --json.

    kind: "gemm" (positional M, N, K; batch), "spmv" (rows, nnz; cols, index_bytes,
    no_x_reuse), "conv2d" (input "NxCxHxW" or a tuple, out_channels; kernel, stride, padding,
    dilation, groups), "attention" (heads, seq; batch, kv_heads, kv_len, head_dim, flash,
    causal) or "elementwise" (elements; inputs, outputs, flops_per_element).
    """
    options = dict(shape, gpu=_device(gpu), dtype=dtype, no_tensor=no_tensor)
    return Result(_perf.op(kind, mnk, options))


def explain(kind, *mnk, gpu, vs, dtype="fp32", no_tensor=False, **shape):
    """One kernel on two GPUs and why the times differ, in words: keel perf explain KIND
    --json (a, b, time_ratio, explanation). Shape as op(); spmv defaults to a million rows and
    ten million nonzeros."""
    options = dict(shape, gpu=_device(gpu), dtype=dtype, no_tensor=no_tensor)
    return Result(_perf.explain(kind, mnk, _device(vs), options))


def llm(config, batch=1, seq=128, phase="prefill", gpu="h100-sxm", dtype="bf16", kv_dtype=None,
        flash=False, no_tensor=False, svg=None, quant="none", generate=0, train=False,
        optimizer="adam", tp=1, pp=1, dp=1, ep=1, link_latency_us=None):
    """Per-op FLOPs, bytes, bound and time of a decoder LLM: keel perf llm --json.

    config: a bundled name (llm_configs()) or a config.json path; seq: the prompt length
    (prefill) or the cached tokens (decode); svg: write a roofline chart there. quant
    (none | w8a8 | w4a16 | fp8), generate (decode steps after the prompt: TTFT and tokens/s),
    train and optimizer (adam | sgd | sgd-momentum), tp/pp/dp/ep (tensor, pipeline, data and
    expert parallel GPUs) and link_latency_us are the CLI's --quant, --generate, --train,
    --optimizer, --tp, --pp, --dp, --ep and --link-latency-us.
    """
    return LlmResult(_perf.llm(_device(config), batch, seq, phase, _device(gpu), dtype, kv_dtype, flash,
                               no_tensor, _optional_path(svg), quant, generate, train, optimizer, tp, pp, dp,
                               ep, link_latency_us))


def _dims(dims):
    if dims is None:
        return []
    if isinstance(dims, dict):
        out = []
        for name, value in dims.items():
            if not isinstance(name, str):
                raise TypeError(f"dims: names must be str, not {type(name).__name__}")
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"dims: {name} must be an int, not {type(value).__name__}")
            out.append(f"{name}={value}")
        return out
    if isinstance(dims, str):
        return [dims]
    return list(dims)


def model(path, gpu="h100-sxm", dims=None, no_tensor=False, svg=None, assume_one=False, depth=None):
    """Per-node FLOPs, MACs, bytes and roofline time of an ONNX graph: keel perf model --json.

    dims: values of symbolic dimensions, {"batch": 8} or ["batch=8"]. A symbolic dimension
    without one raises keel.InvalidArgument naming it, unless assume_one (--assume-one) counts
    it as 1. depth: the module tree ("tree") down to this depth (--depth); None: all of it.
    """
    if not isinstance(assume_one, bool):
        raise TypeError(f"assume_one must be a bool, not {type(assume_one).__name__}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int)):
        raise TypeError(f"depth must be an int or None, not {type(depth).__name__}")
    return ModelResult(_perf.model(os.fspath(path), _device(gpu), _dims(dims), no_tensor,
                                   _optional_path(svg), assume_one, depth))


def calibrate(threads=1, seconds=0.3, dram_mib=1024, out=None, name="cpu-local"):
    """Measures this CPU's peak FLOP/s and bandwidth: keel perf calibrate --json, the device
    document (written to `out` when given; pass that path as gpu= to the other functions)."""
    return Result(_perf.calibrate(threads, seconds, dram_mib, _optional_path(out), name))
