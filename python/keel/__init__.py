"""keel — the runtime pieces under a deep-learning framework, from Python.

Submodules:
    keel.mem   PyTorch CUDA memory snapshots: replay, advise, explain, compare, the HTML
               report, and keel's caching allocator (PyTorch's rules) on a simulated device.
    keel.rand  cuRAND's host generators bit for bit, into numpy arrays.

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
from . import mem, rand  # noqa: E402,F401

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
    "__version__",
]
