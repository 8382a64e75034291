"""The distributed forms of keel's commands, for `python3 -m keel`:

    python3 -m keel mem advise DIR|GLOB|FILE... [--cluster URL] [--workers N] [--json]
    python3 -m keel kv sweep TRACE... [--capacities ...] [--policies ...] [--cluster URL]
    python3 -m keel rand normal --count N --shards K [--out FILE.npy|DIR] [--cluster URL]
    python3 -m keel rand verify [--generator G,G] [--random-seeds S,S] [--full] --cluster URL
    python3 -m keel comm verify [-N 1-8] [--transport shm,tcp] [--full] --cluster URL

`python3 -m keel` hands a command here when it has --cluster, --workers or --shards (the
verify matrices: --cluster or --workers), when KEEL_CLUSTER is set, or (mem advise, kv sweep)
when it names more than one input or a directory; everything else goes to keel's own command
line. A verify matrix exits 1 when a case differs or could not run. URLs: local (default), local:N,
serial, dask://HOST:PORT, celery://redis://HOST:PORT/DB. A progress bar (tasks done/total,
rate, ETA) goes to stderr on a terminal, plain lines otherwise (--no-progress: none). Exit
codes: 0; 1 when some inputs failed (each named on stderr, the rest in the result); 2 for a
bad option, an unreachable cluster or a job past --timeout; 130 for Ctrl-C, which cancels the
outstanding tasks and says how many had finished.
"""

import argparse
import json
import os
import sys

import keel

from . import executors, kv, mem, rand, verify
from .progress import Progress

_RAND = {"uniform": ("uniform", "float32"), "uniform-double": ("uniform", "float64"),
         "normal": ("normal", "float32"), "normal-double": ("normal", "float64"),
         "log-normal": ("log_normal", "float32"), "log-normal-double": ("log_normal", "float64")}
_FLAGS = ("--cluster", "--workers", "--shards")


def wants(argv):
    """Whether `python3 -m keel ARGV` is a distributed command."""
    if len(argv) < 2:
        return False
    cmd = tuple(argv[:2])
    matrix = cmd in (("rand", "verify"), ("comm", "verify"))
    if cmd not in (("mem", "advise"), ("kv", "sweep")) and not (argv[0] == "rand" and argv[1] in _RAND) \
            and not matrix:
        return False
    flags = ("--cluster", "--workers") if matrix else _FLAGS
    if any(a in flags or a.split("=", 1)[0] in flags for a in argv[2:]):
        return True
    if os.environ.get("KEEL_CLUSTER"):
        return True
    if cmd[0] == "rand" or matrix:
        return False
    positional = [a for a in argv[2:] if not a.startswith("-")]
    return len(positional) > 1 or any(os.path.isdir(a) for a in positional)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise keel.InvalidArgument(f"{self.prog}: {message}")


def _common(p):
    p.add_argument("--cluster", default=None, help="local, local:N, serial, dask://HOST:PORT, "
                   "celery://redis://HOST:PORT/DB (default: KEEL_CLUSTER, else local)")
    p.add_argument("--workers", type=int, default=None, help="local backend: worker processes (default: the CPUs)")
    p.add_argument("--timeout", type=float, default=None, help="seconds the whole job may take")
    p.add_argument("--connect-timeout", type=float, default=executors.DEFAULT_CONNECT_TIMEOUT,
                   help="seconds to reach the cluster")
    p.add_argument("--json", action="store_true", help="print the JSON document")
    p.add_argument("--no-progress", action="store_true", help="no progress report on stderr")


def _parser():
    top = _Parser(prog="keel", add_help=True)
    sub = top.add_subparsers(dest="group", required=True)
    m = sub.add_parser("mem").add_subparsers(dest="cmd", required=True).add_parser(
        "advise", help="fleet advise: every snapshot x every candidate setting")
    m.add_argument("inputs", nargs="+", help="snapshots: files, directories, globs")
    m.add_argument("--capacity", default=None, help="memory each process can use, e.g. 24GiB")
    _common(m)
    k = sub.add_parser("kv").add_subparsers(dest="cmd", required=True).add_parser(
        "sweep", help="traces x policies x capacities")
    k.add_argument("inputs", nargs="+", help="JSONL traces")
    k.add_argument("--capacities", default=None)
    k.add_argument("--policies", default=None)
    k.add_argument("--block-size", type=int, default=512)
    k.add_argument("--index", default="hash", choices=["hash", "radix"])
    k.add_argument("--hold", action="store_true")
    _common(k)
    r = sub.add_parser("rand").add_subparsers(dest="cmd", required=True)
    for name in _RAND:
        q = r.add_parser(name)
        q.add_argument("--generator", default="philox4_32_10")
        q.add_argument("--seed", type=int, default=0)
        q.add_argument("--offset", type=int, default=0)
        q.add_argument("--count", type=int, default=10)
        q.add_argument("--mean", type=float, default=0.0)
        q.add_argument("--stddev", type=float, default=1.0)
        q.add_argument("--shards", type=int, default=16)
        q.add_argument("--out", default=None, help="FILE.npy (one file) or a directory of shard-NNNNN.npy")
        _common(q)
    q = r.add_parser("verify", help="keel against libcurand, one task per generator (and random seed)")
    q.add_argument("--generator", default=None, help="generators, comma-separated (default: all)")
    q.add_argument("--length", type=int, default=None, help="values per case")
    q.add_argument("--random-seeds", default=None, help="random seeds of the matrix, comma-separated")
    q.add_argument("--full", action="store_true", help="the full matrix")
    _common(q)
    c = sub.add_parser("comm").add_subparsers(dest="cmd", required=True).add_parser(
        "verify", help="every collective x algorithm x dtype, one task per rank count and transport")
    c.add_argument("-N", "--ranks", default=None, help="rank counts, e.g. 1-4 or 2,8 (default 1-4; --full 1-8)")
    c.add_argument("--transport", default="auto", help="transports, comma-separated: auto, shm, tcp")
    c.add_argument("--full", action="store_true", help="every reduction and size")
    c.add_argument("--max-bytes", default=None, help="largest buffer (default 1M; --full 64M)")
    _common(c)
    return top


def _size(n):
    return keel.format_size(abs(n)) if n >= 0 else "-" + keel.format_size(-n)


def _print_advise(doc, out):
    for f in doc["files"]:
        for d in f["devices"]:
            if not d["comparable"]:
                line = "settings cannot be compared from this recording"
            elif d["best_pytorch"] is None:
                line = "every candidate runs out of memory"
            else:
                b = d["best_pytorch"]
                line = f"{b['settings']}: peak {_size(b['peak_reserved'])}, saves {_size(b['saving'])} ({b['saving_pct']}%)"
            out.write(f"{f['file']} device {d['device']}: {line}\n")
    best = doc["fleet"]["best"]
    if best:
        out.write(f"fleet: {best['settings']} fits {best['devices_fit']} of {doc['fleet']['devices_compared']} "
                  f"compared devices, improves {best['devices_improved']}, saves {_size(best['total_saving'])} "
                  "in total\n")


def _seeds(text):
    if text is None:
        return (None,)
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise keel.InvalidArgument(f"--random-seeds: expected whole numbers, comma-separated, not {text!r}") from None


def _print_verify(doc, out):
    for c in doc["cases"]:
        what = c["generator"] if "generator" in c else f"{c['ranks']} ranks, {c['transport']}"
        failed = c["failed_cases"] if "failed_cases" in c else len(c["failed"])
        out.write(f"{what}: {c['cases']} cases, {failed} differ\n")
    out.write(f"total: {doc['total_cases']} cases, {doc['failed_cases']} differ, {len(doc['errors'])} could not run\n")


def _print_sweep(doc, out):
    for t in doc["traces"]:
        out.write(f"{t['trace']}\n")
        for p in t["points"]:
            out.write(f"  {p['policy']:8} {p['requested']:>8}  hit rate {100 * p['hit_rate_tokens']:.2f}%\n")


def main(argv):
    bar = None
    try:
        a = _parser().parse_args(argv)
        if a.workers is not None and a.workers < 1:
            raise keel.InvalidArgument(f"--workers must be at least 1, not {a.workers}")
        with executors.executor(a.cluster, workers=a.workers, connect_timeout=a.connect_timeout,
                                timeout=a.timeout) as ex:
            bar = None if a.no_progress else Progress(f"{a.group} {a.cmd}")
            if a.group == "mem":
                doc = mem.advise(a.inputs, executor=ex, capacity=a.capacity, progress=bar)
            elif a.cmd == "verify" and a.group == "rand":
                doc = verify.rand_verify(a.generator, a.length, _seeds(a.random_seeds), a.full, executor=ex,
                                         progress=bar)
            elif a.cmd == "verify":
                ranks = a.ranks or ("1-8" if a.full else "1-4")
                doc = verify.comm_verify(ranks, a.transport, a.full, a.max_bytes, executor=ex, progress=bar)
            elif a.group == "kv":
                doc = kv.sweep(a.inputs, a.capacities, a.policies, a.block_size, a.index, a.hold,
                               executor=ex, progress=bar)
            else:
                dist, dtype = _RAND[a.cmd]
                doc = rand.generate(a.count, a.generator, dist, dtype, a.seed, a.offset, a.shards, a.out,
                                    a.mean, a.stddev, executor=ex, progress=bar)
        if bar:
            bar.close()
        shards = a.group == "rand" and a.cmd != "verify"
        if a.json or shards:
            json.dump(doc, sys.stdout, indent=None if shards else 2)
            sys.stdout.write("\n")
        elif a.cmd == "verify":
            _print_verify(doc, sys.stdout)
        elif a.group == "mem":
            _print_advise(doc, sys.stdout)
        else:
            _print_sweep(doc, sys.stdout)
        for e in doc.get("errors", []):
            sys.stderr.write(f"keel: {e.get('file') or e['case']}: {e['error']}\n")
        return 1 if doc.get("errors") or doc.get("failed_cases") else 0
    except executors.Cancelled as e:
        if bar:
            bar.close()
        sys.stderr.write(f"keel: {e}\n")
        return 130
    except (keel.Error, OSError) as e:
        if bar:
            bar.close()
        sys.stderr.write(f"keel: {str(e).splitlines()[0] if str(e) else type(e).__name__}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("keel: cancelled\n")
        return 130
