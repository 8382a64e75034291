"""keel.gpus — the GPU database: specs with sources, CUDA/cuDNN support, which card to pick.

    keel.gpus.show("h100-sxm").tflops.bf16_tensor
    keel.gpus.support("gtx-1050", cuda="13.0").supported          # False, with the reason
    keel.gpus.pick(budget=2000, need=["fp16", "memory=24GiB"]).ranked[0].name
    keel.gpus.list(arch="Hopper").to_pandas()                      # a row per GPU

Each function mirrors a `keel gpus` subcommand and returns its `--json` document, field for
field (keel.gpus.Result). Names are matched case-insensitively ('_' and ' ' count as '-'); an
unknown name raises keel.InvalidArgument naming close matches.
"""

import builtins

from ._keel import gpus as _gpus
from ._result import Result, _scalars

__all__ = ["list", "names", "show", "compare", "support", "pick", "Result"]

names = _gpus.names


class _Rows(Result):
    __slots__ = ()
    _key = ""

    def _rows(self):
        return [_scalars(r) for r in self._data[self._key]]


class GpuList(_Rows):
    """keel gpus list's document: a row per GPU."""

    __slots__ = ()
    _key = "gpus"


class Comparison(_Rows):
    """keel gpus compare's document: a row per metric."""

    __slots__ = ()
    _key = "rows"


class Pick(_Rows):
    """keel gpus pick's document: a row per ranked GPU."""

    __slots__ = ()
    _key = "ranked"


def list(arch=None):  # noqa: A001 (the CLI's name)
    """Every GPU in the database, or those whose architecture contains arch: keel gpus list
    --json."""
    return GpuList(_gpus.list(arch or ""))


def show(name):
    """All numbers of one GPU with their sources: keel gpus show NAME --json."""
    return Result(_gpus.show(name))


def compare(a, b):
    """Two GPUs side by side with ratios B/A: keel gpus compare A B --json."""
    return Comparison(_gpus.compare(a, b))


def support(name, cuda=None, cudnn=None, pytorch=None, wheel=None, driver=None):
    """Whether CUDA toolkit `cuda`, cuDNN release `cudnn`, PyTorch release `pytorch` with its
    wheel variant `wheel` ("cu128"), or driver branch `driver` ("580") supports the GPU (ask
    one): keel gpus support NAME --cuda VER --json. .supported is True, False, or None when
    the table has no row for it (.state "unknown", .reason says so)."""
    return Result(_gpus.support(name, cuda, cudnn, pytorch, wheel, driver))


def pick(budget=None, need=(), top=5, prices=None, by="rate"):
    """The GPUs that fit a budget (USD, launch prices; or the currency of `prices`, a CSV file
    of card,price) and needs ("fp64", "fp16", "bf16", "tf32", "fp8", "int8", "memory=SIZE",
    "bandwidth=GBPS", "cuda=VER", "cudnn=VER", "pytorch=VER+WHEEL"), ranked by the needed rate
    (by="rate") or by rate per unit of price (by="value"), with reasons: keel gpus pick
    --json."""
    needs = [need] if isinstance(need, str) else builtins.list(need)
    return Pick(_gpus.pick(budget, needs, top, None if prices is None else str(prices), by))
