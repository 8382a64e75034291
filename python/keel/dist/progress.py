"""A progress report for a job: a bar on a terminal, plain lines otherwise.

    bar = Progress("mem advise")          # writes to stderr
    executor.run(tasks, progress=bar)     # bar(done, total) as tasks finish
    bar.close()
"""

import sys
import time


class Progress:
    def __init__(self, what, stream=None, width=30, every=0.1):
        self.what = what
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.every = every  # plain lines: at each tenth of the job
        self.start = time.monotonic()
        self.done = 0
        self.total = 0
        self._next_line = 0.0
        self._drawn = False

    def __call__(self, done, total):
        self.done, self.total = done, total
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else float("inf")
        eta_s = "?" if eta == float("inf") else f"{eta:.0f} s"
        if self.tty:
            fill = int(self.width * done / total) if total else self.width
            self.stream.write(f"\r{self.what} [{'#' * fill}{'.' * (self.width - fill)}] {done}/{total} tasks "
                              f"{rate:.1f}/s ETA {eta_s}  ")
            self._drawn = True
            self.stream.flush()
        elif total and (done / total >= self._next_line or done == total):
            self.stream.write(f"keel: {self.what}: {done}/{total} tasks done, {rate:.1f}/s, ETA {eta_s}\n")
            self._next_line = (int(done / total / self.every) + 1) * self.every
            self.stream.flush()

    def close(self):
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
