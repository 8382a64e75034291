"""keel.comm — keel's collectives among processes, on numpy arrays.

    comm = keel.comm.Communicator.from_env()     # keel comm launch, torchrun/env://, mpirun, srun
    grad = np.ones(1 << 20, dtype=np.float32)
    comm.allreduce(grad, op="avg")               # in place; returns grad
    parts = comm.allgather(np.array([comm.rank]))
    comm.close()                                 # or: with Communicator.from_env() as comm:

Collectives: allreduce, reduce, broadcast, reduce_scatter, allgather, alltoall, send, recv,
barrier. Arrays are C-contiguous numpy arrays of float32, float64, float16, int32, int64 or
uint8 (bfloat16: a uint16 array with dtype="bf16"); allreduce, reduce and broadcast work in
place unless out= is given; reduce_scatter and allgather are in place when out (or x) is the
rank's block of the other. Reductions: sum, prod, min, max, avg. Every call takes algo= (ring,
tree, rd, rabenseifner, reducer, direct; default: keel's cost model) and timeout= (seconds;
default: the communicator's, KEEL_COMM_TIMEOUT or 60 s). The GIL is released while a
collective runs; one thread at a time per communicator.

Errors name the rank: bad arrays, sizes that do not fit, and any call after close() raise
keel.InvalidArgument ("keel.comm rank 1 of 4: allreduce: out has 3 elements, expected 4"). A
peer that never comes raises TimeoutError (keel.CommTimeoutError), a dead or closed peer
PeerError, a peer calling something else CommError; each has .collective, .seq and .rank
(the missing or disagreeing rank), and afterwards the communicator is aborted (later calls
raise PeerError at once), as in C++.
"""

from ._keel import CommError, CommTimeoutError, PeerError
from ._keel import comm as _comm

Communicator = _comm.Communicator
launch_env = _comm.launch_env
parse_rank_list = _comm.parse_rank_list
TimeoutError = CommTimeoutError  # noqa: A001  (a subclass of the built-in TimeoutError)

DTYPES = ("float32", "float64", "float16", "int32", "int64", "uint8", "bf16")
REDUCE_OPS = ("sum", "prod", "min", "max", "avg")
ALGORITHMS = ("auto", "ring", "tree", "rd", "rabenseifner", "reducer", "direct")

__all__ = [
    "Communicator",
    "launch_env",
    "parse_rank_list",
    "TimeoutError",
    "CommTimeoutError",
    "PeerError",
    "CommError",
    "DTYPES",
    "REDUCE_OPS",
    "ALGORITHMS",
]
