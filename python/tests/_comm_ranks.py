"""The ranks test_comm.py launches: `python3 _comm_ranks.py SCENARIO` under keel comm launch.

Each scenario checks its own results and exits 0; a failed check raises (exit 1), so the
launcher reports the rank. Every line printed starts with the rank.
"""

import os
import signal
import sys
import time

import numpy as np

import keel
from keel import comm

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.uint8]


def data(rank, n, dtype, salt=0):
    """Small values, so that sums and products of up to 4 ranks are exact in every dtype."""
    return ((np.arange(n) * 7 + rank * 3 + salt) % 5 + 1).astype(dtype)


def say(c, *args):
    print(f"rank {c.rank}:", *args, flush=True)


def collectives():
    with comm.Communicator.from_env(timeout=60) as c:
        r, n = c.rank, c.size
        env = os.environ  # keel comm launch / torchrun, or Open MPI's mpirun
        assert c.size == int(env.get("WORLD_SIZE") or env["OMPI_COMM_WORLD_SIZE"])
        assert c.rank == int(env.get("RANK") or env["OMPI_COMM_WORLD_RANK"])
        for dtype in DTYPES:
            for count in (0, 1, 7, 1000, 65537):
                everyone = [data(p, count, dtype) for p in range(n)]
                # allreduce: in place and into out, every reduction
                for op in comm.REDUCE_OPS:
                    if op == "prod" and dtype == np.uint8 and n > 3:
                        continue
                    x = data(r, count, dtype)
                    y = c.allreduce(x, op=op)
                    assert y is x
                    stack = np.stack(everyone).astype(np.float64)
                    want = {
                        "sum": stack.sum(0),
                        "prod": stack.prod(0),
                        "min": stack.min(0),
                        "max": stack.max(0),
                        "avg": stack.sum(0) / n,
                    }[op]
                    if np.issubdtype(dtype, np.integer) and op == "avg":
                        want = np.floor(want)
                    np.testing.assert_allclose(x.astype(np.float64), want, rtol=1e-3,
                                               err_msg=f"allreduce {op} {dtype} {count}")
                out = np.empty(count, dtype)
                src = data(r, count, dtype)
                src.flags.writeable = False
                c.allreduce(src, out=out, op="max")
                np.testing.assert_array_equal(out, np.stack(everyone).max(0))
                # reduce onto the last rank
                x = data(r, count, dtype)
                got = c.reduce(x, root=n - 1, op="sum")
                if r == n - 1:
                    np.testing.assert_allclose(got.astype(np.float64),
                                               np.stack(everyone).astype(np.float64).sum(0), rtol=1e-3)
                else:
                    assert got is None
                # broadcast from rank 0
                x = data(r, count, dtype)
                c.broadcast(x, root=0)
                np.testing.assert_array_equal(x, everyone[0])
                # allgather
                g = c.allgather(data(r, count, dtype))
                np.testing.assert_array_equal(g, np.concatenate(everyone))
                # reduce_scatter: block r of the sum
                blocks = [np.concatenate([data(p, count, dtype, salt=b) for b in range(n)]) for p in range(n)]
                rs = c.reduce_scatter(blocks[r].copy())
                want = sum(blocks[p][r * count:(r + 1) * count].astype(np.float64) for p in range(n))
                np.testing.assert_allclose(rs.astype(np.float64), want, rtol=1e-3)
                # alltoall: block p of rank q's input -> block q of rank p's output
                a = np.concatenate([data(r, count, dtype, salt=p) for p in range(n)])
                t = c.alltoall(a)
                np.testing.assert_array_equal(t, np.concatenate([data(p, count, dtype, salt=r) for p in range(n)]))
        # in-place allgather (x is the rank's block of out) and reduce_scatter into x's block
        out = np.zeros(4 * n, np.int64)
        out[r * 4:(r + 1) * 4] = r + 1
        c.allgather(out[r * 4:(r + 1) * 4], out=out)
        np.testing.assert_array_equal(out, np.repeat(np.arange(1, n + 1), 4))
        big = np.ones(4 * n, np.float32)
        c.reduce_scatter(big, out=big[r * 4:(r + 1) * 4])
        np.testing.assert_array_equal(big[r * 4:(r + 1) * 4], np.full(4, n, np.float32))
        # bfloat16 as uint16: 1.0 is 0x3f80, n ranks sum to n
        bf = np.full(8, 0x3F80, np.uint16)
        c.allreduce(bf, dtype="bf16")
        assert (bf.astype(np.uint32) << 16).view(np.float32).tolist() == [float(n)] * 8
        # send/recv around the ring, ordered with the collectives
        nxt, prv = (r + 1) % n, (r - 1) % n
        if n > 1:
            msg = np.full(1 << 16, r, np.int32)
            inbox = np.empty_like(msg)
            if r % 2 == 0:
                c.send(msg, nxt)
                c.recv(inbox, prv)
            else:
                c.recv(inbox, prv)
                c.send(msg, nxt)
            assert (inbox == prv).all()
        for algo in ("ring", "tree", "rd", "rabenseifner"):
            x = np.ones(1000, np.float32)
            c.allreduce(x, algo=algo)
            assert (x == n).all(), algo
        c.barrier()
        assert c.seq > 0
        assert c.transport_to(nxt) in ("shm", "tcp") if n > 1 else True
        algo, why = c.choose("allreduce", 1 << 20)
        assert algo in comm.ALGORITHMS and why
        say(c, "collectives OK", c.seq)
    assert c.closed


def errors():
    """Bad calls on a communicator: each raises a keel error naming the rank."""
    c = comm.Communicator.from_env(timeout=20)
    r, n = c.rank, c.size
    tag = f"rank {r} of {n}"

    def expect(cls, fn, *words):
        try:
            fn()
        except cls as e:
            text = str(e)
            assert tag in text, text
            for w in words:
                assert w in text, (w, text)
            return e
        raise AssertionError(f"{fn} did not raise {cls}")

    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.complex64)), "complex64")
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(8, np.float32)[::2]), "contiguous")
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    expect(keel.InvalidArgument, lambda: c.allreduce(ro), "read-only")
    expect(keel.InvalidArgument, lambda: c.broadcast(ro, root=(r + 1) % n), "read-only")
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.float32), out=np.zeros(3, np.float32)), "3 elements")
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.float32), out=np.zeros(4, np.float64)), "dtype")
    expect(keel.InvalidArgument, lambda: c.allgather(np.zeros(4, np.float32), out=np.zeros(4 * n + 1, np.float32)))
    expect(keel.InvalidArgument, lambda: c.reduce_scatter(np.zeros(4 * n + 1, np.float32)), "equal blocks")
    expect(keel.InvalidArgument, lambda: c.alltoall(np.zeros(4 * n + 1, np.float32)), "equal blocks")
    expect(keel.InvalidArgument, lambda: c.broadcast(np.zeros(4, np.float32), root=n), "root")
    expect(keel.InvalidArgument, lambda: c.send(np.zeros(4, np.float32), r), "itself")
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.uint8), dtype="bf16"), "bf16")
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.float32), op="xor"))
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.float32), timeout=-1), "timeout")
    try:
        c.allreduce([1.0, 2.0])
    except TypeError:
        pass
    else:
        raise AssertionError("a list is not an array")
    # the communicator still works after refused calls
    x = np.ones(4, np.float32)
    c.allreduce(x)
    assert (x == n).all()
    c.close()
    c.close()
    expect(keel.InvalidArgument, lambda: c.allreduce(np.zeros(4, np.float32)), "closed")
    expect(keel.InvalidArgument, lambda: c.barrier(), "closed")
    assert "closed" in repr(c)
    print(f"rank {r}: errors OK", flush=True)


def mismatch():
    """Rank 0 reduces 4 floats, the others 8: every rank raises CommError naming a rank."""
    c = comm.Communicator.from_env(timeout=20)
    n = 4 if c.rank == 0 else 8
    try:
        c.allreduce(np.ones(n, np.float32))
    except keel.CommError as e:
        assert e.collective == "allreduce" and e.seq >= 1 and 0 <= e.rank < c.size, (e.rank, str(e))
        assert "rank" in str(e)
        print(f"rank {c.rank}: mismatch raised {type(e).__name__} blaming rank {e.rank}: {e}", flush=True)
    else:
        raise AssertionError("a size mismatch went through")
    # aborted: later calls fail at once
    t = time.monotonic()
    try:
        c.barrier()
    except keel.PeerError:
        assert time.monotonic() - t < 5
    else:
        raise AssertionError("an aborted communicator ran a barrier")


def killed():
    """The last rank SIGKILLs itself in the middle of a loop of allreduces; the others raise
    PeerError naming it, well within the timeout."""
    c = comm.Communicator.from_env(timeout=30)
    victim = c.size - 1
    x = np.ones(1 << 16, np.float32)
    for i in range(100000):
        if c.rank == victim and i == 50:
            os.kill(os.getpid(), signal.SIGKILL)
        t = time.monotonic()
        try:
            c.allreduce(x)
        except keel.PeerError as e:
            took = time.monotonic() - t
            assert e.rank == victim, (e.rank, str(e))
            assert f"rank {victim}" in str(e), str(e)
            assert took < 20, took
            print(f"rank {c.rank}: PeerError after {took:.3f} s blaming rank {e.rank}: {e}", flush=True)
            return
        except keel.CommTimeoutError as e:
            raise AssertionError(f"timed out instead of noticing the death: {e}")
        x[:] = 1
    raise AssertionError("the victim never died")


def timeout():
    """Rank 1 never joins the allreduce: rank 0 raises TimeoutError naming rank 1."""
    c = comm.Communicator.from_env(timeout=30)
    if c.rank == 1:
        time.sleep(6)
        return
    t = time.monotonic()
    try:
        c.allreduce(np.ones(16, np.float32), timeout=1.5)
    except TimeoutError as e:
        took = time.monotonic() - t
        assert isinstance(e, keel.CommTimeoutError) and isinstance(e, comm.TimeoutError)
        assert e.rank == 1 and "rank 1" in str(e), str(e)
        assert 1.0 < took < 5, took
        print(f"rank 0: TimeoutError after {took:.3f} s: {e}", flush=True)
    else:
        raise AssertionError("no timeout")


def threads():
    """The GIL is released during a collective: another Python thread runs meanwhile."""
    import threading

    c = comm.Communicator.from_env(timeout=30)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    th = threading.Thread(target=tick)
    th.start()
    if c.rank == 0:
        time.sleep(1.0)  # rank 1 waits in the barrier meanwhile, without the GIL
    before = len(ticks)
    c.barrier()
    during = len(ticks) - before
    stop.set()
    th.join()
    if c.rank == 1:
        assert during > 50, during
    print(f"rank {c.rank}: {during} ticks during the barrier", flush=True)


if __name__ == "__main__":
    globals()[sys.argv[1]]()
