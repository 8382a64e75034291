"""keel.torch — keel as a torch.distributed backend.

    import torch.distributed as dist
    import keel.torch                              # registers the backend "keel"
    dist.init_process_group("keel")                # env://: RANK, WORLD_SIZE, MASTER_ADDR, ...
    dist.all_reduce(t)                             # and every other collective, async ones too
    model = torch.nn.parallel.DistributedDataParallel(model)

Launch with `keel comm launch -n 4 -- python3 train.py` (it sets torch's env:// variables;
Debian 12's torchrun does not start under its Python 3.11) or any env:// launcher.

The process group (keel._keel_torch.ProcessGroupKeel, a torch ProcessGroup) rendezvouses
through the store torch made and runs every operation in order on a worker thread over
keel::comm (shared memory between ranks of a host, TCP otherwise): all_reduce, reduce,
broadcast, all_gather (and _allgather_base), reduce_scatter (and _reduce_scatter_base),
all_to_all and all_to_all_single (uneven splits too), gather, scatter, barrier, send/recv and
their async forms; work objects have wait(), is_completed() and get_future() (DDP's comm
hooks). CPU, contiguous tensors; reductions on float32, float64, float16, bfloat16, int32,
int64 and uint8 with SUM, AVG, PRODUCT, MIN, MAX; data movement on any dtype.

Errors: init_process_group's timeout bounds every operation (KEEL_COMM_TIMEOUT overrides
it); a peer that does not come raises keel.CommTimeoutError (a TimeoutError), a dead peer
keel.PeerError, both naming the collective, its sequence number and the rank, with the
attributes .collective, .seq and .rank; what keel cannot do raises keel.InvalidArgument
naming the rank when the operation is issued.
"""

import datetime

import torch  # noqa: F401  (torch's classes must be registered before the extension loads)
import torch.distributed as dist

from . import _keel  # noqa: F401  (keel's exception classes, for the translator)
from ._keel_torch import ProcessGroupKeel

BACKEND = "keel"


def create_process_group(store, rank, world_size, timeout=datetime.timedelta(minutes=30)):
    """The creator torch.distributed.Backend.register_backend calls (torch 1.13's signature:
    store, rank, world_size, timeout). Collective over the group's ranks."""
    return ProcessGroupKeel(store, rank, world_size, timeout)


def _register():
    if BACKEND.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    dist.Backend.register_backend(BACKEND, create_process_group)


_register()

__all__ = ["BACKEND", "ProcessGroupKeel", "create_process_group"]
