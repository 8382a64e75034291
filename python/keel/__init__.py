"""keel — the runtime pieces under a deep-learning framework, from Python.

Submodules:
    keel.mem   PyTorch CUDA memory snapshots: replay, advise, explain, compare, the HTML
               report, and keel's caching allocator (PyTorch's rules) on a simulated device.
    keel.rand  cuRAND's host generators bit for bit, into numpy arrays.
    keel.kv    KV-cache traces: replay and sweep eviction policies (keel kv), the block pool.
    keel.perf  the roofline model of kernels, LLMs and ONNX graphs (keel perf).
    keel.gpus  the GPU database: specs, CUDA/cuDNN support, which card to pick (keel gpus).
    keel.comm  keel's collectives among processes on numpy arrays (Communicator.from_env).
    keel.torch (import it explicitly) registers "keel" as a torch.distributed backend.

Every error keel raises derives from keel.Error and from the standard class a caller would
catch: InvalidArgument and ParseError are ValueErrors, IOError an OSError, OutOfMemoryError a
MemoryError, CommTimeoutError a TimeoutError.
"""

from ._keel import (  # noqa: F401  (re-exported)
    BackendError,
    CommError,
    CommTimeoutError,
    Error,
    InvalidArgument,
    IOError,
    OutOfMemoryError,
    ParseError,
    PeerError,
    __version__,
    format_size,
    parse_size,
)
from . import comm, mem, rand  # noqa: E402,F401
from . import gpus, kv, perf  # noqa: E402,F401

__all__ = [
    "Error",
    "InvalidArgument",
    "ParseError",
    "IOError",
    "BackendError",
    "OutOfMemoryError",
    "CommError",
    "CommTimeoutError",
    "PeerError",
    "parse_size",
    "format_size",
    "mem",
    "rand",
    "kv",
    "perf",
    "gpus",
    "comm",
    "__version__",
]
