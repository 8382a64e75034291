"""DistributedDataParallel on CPU with keel as the torch.distributed backend.

    keel comm launch -n 2 -- python3 examples/ddp/train.py --backend keel --out keel.pt
    keel comm launch -n 2 -- python3 examples/ddp/train.py --backend gloo --out gloo.pt
    python3 examples/ddp/train.py --compare keel.pt gloo.pt

Trains a small MLP on a synthetic regression task, each rank on its own shard of every batch.
DDP averages the gradients with all_reduce; with 2 ranks a sum of two numbers is the same in
either order, so the weights after training are bit for bit those of the Gloo run (with more
ranks the order of the additions differs and they agree to float32 rounding, ~1e-6).
"""

import argparse
import datetime
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))


def batch(step, rank, world, per_rank=16):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(per_rank * world, 32, generator=g)
    w = torch.linspace(-1, 1, 32)
    y = torch.sin(x @ w).unsqueeze(1)
    shard = slice(rank * per_rank, (rank + 1) * per_rank)
    return x[shard], y[shard]


def train(backend, steps, out):
    if backend == "keel":
        import keel.torch  # noqa: F401  (registers the backend)
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    ddp = nn.parallel.DistributedDataParallel(model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.02, momentum=0.9)
    for step in range(steps):
        x, y = batch(step, rank, world)
        opt.zero_grad()
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        if rank == 0 and (step % 20 == 0 or step == steps - 1):
            print(f"{backend} step {step}: loss {loss.item():.6f}", flush=True)
    if rank == 0 and out:
        torch.save(ddp.module.state_dict(), out)
    dist.barrier()
    dist.destroy_process_group()


def compare(a, b, tolerance):
    sa, sb = torch.load(a), torch.load(b)
    worst = max((sa[k] - sb[k]).abs().max().item() for k in sa)
    exact = all(torch.equal(sa[k], sb[k]) for k in sa)
    print(f"{len(sa)} tensors, max |difference| {worst:.3g}, bit for bit: {exact}")
    return exact or worst <= tolerance


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="keel", help="keel or gloo")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--out", help="rank 0 saves the trained weights here")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two saved runs")
    p.add_argument("--tolerance", type=float, default=0.0, help="max |difference| --compare accepts")
    args = p.parse_args()
    if args.compare:
        sys.exit(0 if compare(*args.compare, args.tolerance) else 1)
    train(args.backend, args.steps, args.out)


if __name__ == "__main__":
    main()
