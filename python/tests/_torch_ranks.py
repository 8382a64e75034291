"""The ranks test_torch.py launches: `python3 _torch_ranks.py SCENARIO` under keel comm launch
(torch's env:// variables). Each scenario checks its own results against Gloo run on the same
inputs in the same process (a second process group) and exits 0, or raises."""

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import keel
import keel.torch

INTS = [torch.int32, torch.int64, torch.uint8]
FLOATS = [torch.float32, torch.float64, torch.float16]
SIZES = [0, 1, 7, 1000, 65537]


def data(rank, n, dtype, salt=0):
    """Small values: sums and products over 4 ranks are exact in every dtype."""
    return ((torch.arange(n) * 7 + rank * 3 + salt) % 5 + 1).to(dtype)


def same(a, b, what):
    if a.dtype in (torch.float16, torch.bfloat16):
        assert torch.allclose(a.float(), b.float(), rtol=1e-2, atol=1e-2), what
    elif a.is_floating_point():
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), what
    else:
        assert torch.equal(a, b), (what, a[:8], b[:8])


def init(timeout=60):
    dist.init_process_group("keel", timeout=datetime.timedelta(seconds=timeout))
    return dist.new_group(backend="gloo")


def ops():
    gloo = init()
    r, n = dist.get_rank(), dist.get_world_size()
    pg = dist.distributed_c10d._get_default_group()
    assert isinstance(pg, keel.torch.ProcessGroupKeel) and isinstance(pg, dist.ProcessGroup)
    assert dist.get_backend() == "keel" and dist.get_backend(gloo) == "gloo"
    ops_ = [dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN, dist.ReduceOp.PRODUCT]
    for dtype in INTS + FLOATS:
        for size in SIZES:
            tag = f"{dtype} {size}"
            for op in ops_:
                if op == dist.ReduceOp.PRODUCT and size > 1000:
                    continue
                a, b = data(r, size, dtype), data(r, size, dtype)
                dist.all_reduce(a, op=op)
                dist.all_reduce(b, op=op, group=gloo)
                same(a, b, f"all_reduce {op} {tag}")
            a, b = data(r, size, dtype), data(r, size, dtype)
            dist.broadcast(a, src=n - 1)
            dist.broadcast(b, src=n - 1, group=gloo)
            same(a, b, f"broadcast {tag}")
            a = [torch.empty(size, dtype=dtype) for _ in range(n)]
            b = [torch.empty(size, dtype=dtype) for _ in range(n)]
            dist.all_gather(a, data(r, size, dtype))
            if size:  # Gloo 1.13 dies of SIGFPE gathering empty tensors
                dist.all_gather(b, data(r, size, dtype), group=gloo)
            for p in range(n):
                same(a[p], b[p], f"all_gather {tag}")
            a, b = data(r, size, dtype), data(r, size, dtype)
            dist.reduce(a, dst=0)
            dist.reduce(b, dst=0, group=gloo)
            if r == 0:
                same(a, b, f"reduce {tag}")
            # reduce_scatter: Gloo has none; its all_reduce, sliced, is the reference
            ins = [data(r, size, dtype, salt=p) for p in range(n)]
            out = torch.empty(size, dtype=dtype)
            dist.reduce_scatter(out, ins)
            ref = torch.cat(ins)
            dist.all_reduce(ref, group=gloo)
            same(out, ref[r * size:(r + 1) * size], f"reduce_scatter {tag}")
            flat_out = torch.empty(size, dtype=dtype)
            dist._reduce_scatter_base(flat_out, torch.cat(ins))
            same(flat_out, out, f"_reduce_scatter_base {tag}")
            # all_to_all_single (Gloo has it) and all_to_all lists (Gloo has not)
            x = torch.cat([data(r, size, dtype, salt=p) for p in range(n)])
            a, b = torch.empty_like(x), torch.empty_like(x)
            dist.all_to_all_single(a, x)
            if size:
                dist.all_to_all_single(b, x, group=gloo)
            same(a, b, f"all_to_all_single {tag}")
            outs = [torch.empty(size, dtype=dtype) for _ in range(n)]
            dist.all_to_all(outs, list(x.chunk(n)) if size else [torch.empty(0, dtype=dtype)] * n)
            same(torch.cat(outs), a, f"all_to_all {tag}")
            # gather, scatter
            g = [torch.empty(size, dtype=dtype) for _ in range(n)] if r == 0 else None
            h = [torch.empty(size, dtype=dtype) for _ in range(n)] if r == 0 else None
            dist.gather(data(r, size, dtype), g, dst=0)
            if size:
                dist.gather(data(r, size, dtype), h, dst=0, group=gloo)
            if r == 0:
                for p in range(n):
                    same(g[p], h[p], f"gather {tag}")
            s = torch.empty(size, dtype=dtype)
            dist.scatter(s, [data(p, size, dtype, salt=9) for p in range(n)] if r == 1 else None, src=1)
            same(s, data(r, size, dtype, salt=9), f"scatter {tag}")
    # bfloat16 and AVG, which Gloo lacks: against Gloo on float32 of the same (exact) values
    for op in ops_ + [dist.ReduceOp.AVG]:
        a = data(r, 1000, torch.bfloat16)
        dist.all_reduce(a, op=op)
        b = data(r, 1000, torch.float32)
        dist.all_reduce(b, op=dist.ReduceOp.SUM if op == dist.ReduceOp.AVG else op, group=gloo)
        if op == dist.ReduceOp.AVG:
            b /= n
        same(a, b.to(torch.bfloat16), f"bf16 {op}")
    a = data(r, 1000, torch.float32)
    dist.all_reduce(a, op=dist.ReduceOp.AVG)
    b = data(r, 1000, torch.float32)
    dist.all_reduce(b, group=gloo)
    same(a, b / n, "avg")
    # any dtype moves: bool and complex broadcast, all_gather_into_tensor
    flags = torch.tensor([r % 2 == 0, True, False])
    dist.broadcast(flags, src=1)
    assert flags.tolist() == [False, True, False]
    z = torch.full((3,), complex(r, -r), dtype=torch.complex64)
    dist.broadcast(z, src=n - 1)
    assert z.tolist() == [complex(n - 1, 1 - n)] * 3
    big = torch.empty(4 * n)
    dist._all_gather_base(big, torch.full((4,), float(r)))
    assert big.tolist() == [float(p) for p in range(n) for _ in range(4)]
    # uneven all_to_all_single: rank r sends p+1 rows to rank p
    in_splits = [p + 1 for p in range(n)]
    out_splits = [r + 1] * n
    x = torch.cat([torch.full((p + 1, 2), float(r * 10 + p)) for p in range(n)])
    y = torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(y, x, out_splits, in_splits)
    z = torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(z, x, out_splits, in_splits, group=gloo)
    assert torch.equal(y, z)
    # uneven all_to_all lists
    outs = [torch.empty(r + 1) for _ in range(n)]
    dist.all_to_all(outs, [torch.full((p + 1,), float(r)) for p in range(n)])
    assert [o.tolist() for o in outs] == [[float(p)] * (r + 1) for p in range(n)]
    # point to point around the ring, blocking and async
    nxt, prv = (r + 1) % n, (r - 1) % n
    msg, box = torch.full((1 << 15,), float(r)), torch.empty(1 << 15)
    if r % 2 == 0:
        dist.send(msg, nxt)
        dist.recv(box, prv)
    else:
        dist.recv(box, prv)
        dist.send(msg, nxt)
    assert (box == prv).all()
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, msg, nxt), dist.P2POp(dist.irecv, box, prv)])
    for q in reqs:
        q.wait()
    assert (box == prv).all()
    # async work objects: wait, is_completed, get_future
    works = []
    for i in range(8):
        t = torch.full((1 << 16,), float(i + r))
        works.append((t, dist.all_reduce(t, async_op=True)))
    for i, (t, w) in enumerate(works):
        assert w.wait()
        assert w.is_completed() and w.is_success()
        assert (t == sum(i + p for p in range(n))).all()
    t = torch.ones(10)
    fut = dist.all_reduce(t, async_op=True).get_future()
    assert torch.equal(fut.wait()[0], torch.full((10,), float(n)))
    chained = dist.all_reduce(torch.ones(3), async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    assert chained.wait().tolist() == [2.0 * n] * 3
    w = dist.barrier(async_op=True)
    w.wait()
    dist.barrier()
    # what keel cannot do is refused when issued, naming the rank
    for bad, word in [
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.int8)), "cannot reduce"),
        (lambda: dist.all_reduce(torch.ones(4, 2).t()), "non-contiguous"),
        (lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BXOR), "not supported"),
        (lambda: dist.recv(torch.ones(4)), "any source"),
    ]:
        try:
            bad()
        except keel.InvalidArgument as e:
            assert f"rank {r} of {n}" in str(e) and word in str(e), str(e)
        else:
            raise AssertionError(f"no error: {word}")
    # the group still works after refused calls
    t = torch.ones(5)
    dist.all_reduce(t)
    assert (t == n).all()
    print(f"rank {r}: ops OK ({pg.issued} operations)", flush=True)
    dist.destroy_process_group()


def killed():
    """The last rank SIGKILLs itself during a loop of all_reduces: the others raise PeerError
    naming it, well within init_process_group's timeout."""
    init(timeout=30)
    r, n = dist.get_rank(), dist.get_world_size()
    victim = n - 1
    t = torch.ones(1 << 16)
    for i in range(100000):
        if r == victim and i == 20:
            os.kill(os.getpid(), signal.SIGKILL)
        start = time.monotonic()
        try:
            dist.all_reduce(t)
        except keel.PeerError as e:
            took = time.monotonic() - start
            assert e.rank == victim and f"rank {victim}" in str(e), str(e)
            assert took < 20, took
            print(f"rank {r}: PeerError after {took:.3f} s blaming rank {e.rank}: {e}", flush=True)
            # later operations fail at once, through async work objects too
            w = dist.all_reduce(torch.ones(2), async_op=True)
            try:
                w.wait()
            except keel.PeerError:
                pass
            else:
                raise AssertionError("an aborted group ran an all_reduce")
            os._exit(0)  # the group's peers are gone; skip the destructors' goodbyes
        t.fill_(1)
    raise AssertionError("the victim never died")


def timeout():
    """Rank 1 never calls the all_reduce: rank 0's raises TimeoutError naming rank 1 after the
    init_process_group timeout."""
    init(timeout=5)
    r = dist.get_rank()
    if r == 1:
        time.sleep(14)
        os._exit(0)
    start = time.monotonic()
    try:
        dist.all_reduce(torch.ones(4))
    except TimeoutError as e:
        took = time.monotonic() - start
        assert isinstance(e, keel.CommTimeoutError) and e.rank == 1 and "rank 1" in str(e), str(e)
        assert 4.5 < took < 12, took
        print(f"rank 0: TimeoutError after {took:.3f} s: {e}", flush=True)
        os._exit(0)
    raise AssertionError("no timeout")


if __name__ == "__main__":
    globals()[sys.argv[1]]()
