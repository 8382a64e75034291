"""Attacks a running keel TCP store (issue 15) from outside the job: hostile_test.sh's comm cases.

Usage: store_attack.py PORT SECRET [SECONDS]

Connects to 127.0.0.1:PORT while a job runs and tries, in turn: garbage instead of the
handshake; a handshake with a wrong proof; with the job's secret, ADD on a value that is not a
counter (SET k=abc, ADD k 1: this used to kill rank 0), ADD with a short delta, ADD past
INT64_MAX, a 1 GiB value (this grew rank 0 by 1.8 GB); then 1,000 random malformed requests.
Exits 0 when the store refused each one (a refusal, or the connection dropped) and still
answers a well-formed SET/GET afterwards; prints what went wrong and exits 1 otherwise.
"""

import hashlib
import hmac
import os
import random
import socket
import struct
import sys
import time

MAGIC = b"KEELSTO1"
SET, GET, ADD = 1, 2, 3


def connect(port, deadline):
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.settimeout(10)
            return s
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def handshake(s, secret):
    challenge = recv_exact(s, 24)
    if challenge[:8] != MAGIC:
        raise RuntimeError("not a keel store")
    server_nonce, client_nonce = challenge[8:], os.urandom(16)
    proof = hmac.new(secret, b"keel-store client|" + server_nonce + client_nonce,
                     hashlib.sha256).digest()
    s.sendall(client_nonce + proof)
    return recv_exact(s, 1)[0] == 0 and len(recv_exact(s, 32)) == 32


def request(s, cmd, key, value):
    s.sendall(struct.pack("<BIQ", cmd, len(key), len(value)) + key + value)
    status, n = struct.unpack("<BQ", recv_exact(s, 9))
    return status, recv_exact(s, n)


def refused(port, secret, deadline, cmd, key, value):
    """True when the store refuses the request or drops the connection."""
    s = connect(port, deadline)
    try:
        if not handshake(s, secret):
            raise RuntimeError("the store refused the job's own secret")
        return request(s, cmd, key, value)[0] != 0
    except (ConnectionError, socket.timeout, BrokenPipeError, ConnectionResetError):
        return True
    finally:
        s.close()


def main():
    port, secret = int(sys.argv[1]), sys.argv[2].encode()
    deadline = time.monotonic() + (float(sys.argv[3]) if len(sys.argv) > 3 else 30)
    problems = []

    # Garbage instead of the handshake, and a wrong proof: refused.
    s = connect(port, deadline)
    try:
        recv_exact(s, 24)
        s.sendall(os.urandom(48))
        if recv_exact(s, 1)[0] == 0:
            problems.append("a client with a random proof was accepted")
    except (ConnectionError, socket.timeout):
        pass
    s.close()
    s = connect(port, deadline)
    try:
        if handshake(s, b"not the secret of this job"):
            problems.append("a client with the wrong secret was accepted")
    except (ConnectionError, socket.timeout):
        pass
    s.close()

    # With the secret: values that are not counters, short deltas, overflow.
    s = connect(port, deadline)
    if not handshake(s, secret):
        problems.append("the store refused the job's own secret")
    request(s, SET, b"attack/k", b"abc")
    request(s, SET, b"attack/max", str(2**63 - 1).encode())
    s.close()
    for what, key, value in [("ADD on 'abc'", b"attack/k", struct.pack("<q", 1)),
                             ("ADD with a 3-byte delta", b"attack/max", b"\x01\x02\x03"),
                             ("ADD past INT64_MAX", b"attack/max", struct.pack("<q", 1))]:
        if not refused(port, secret, deadline, ADD, key, value):
            problems.append(what + " was accepted")

    # A 1 GiB value: the store must refuse it at the header, not buffer it.
    s = connect(port, deadline)
    handshake(s, secret)
    try:
        s.sendall(struct.pack("<BIQ", SET, 5, 1 << 30) + b"flood")
        chunk = b"\0" * (1 << 20)
        for _ in range(1024):
            s.sendall(chunk)
    except (ConnectionError, BrokenPipeError, ConnectionResetError, socket.timeout):
        pass
    s.close()

    # 1,000 random malformed requests, reconnecting whenever the store drops us.
    rng = random.Random(15)
    s = None
    for _ in range(1000):
        try:
            if s is None:
                s = connect(port, deadline)
                handshake(s, secret)
            cmd = rng.choice([0, 1, 2, 3, 4, 5, 6, 255])
            key = os.urandom(rng.randrange(0, 40))
            value = os.urandom(rng.randrange(0, 40))
            head = struct.pack("<BIQ", cmd, len(key) + rng.choice([0, 0, 1, 1 << 31]),
                               len(value) + rng.choice([0, 0, 7, 1 << 40]))
            s.sendall(head + key + value)
            s.settimeout(0.002)
            try:
                s.recv(65536)
            except socket.timeout:
                pass
        except (ConnectionError, BrokenPipeError, ConnectionResetError, OSError):
            if s is not None:
                s.close()
            s = None
    if s is not None:
        s.close()

    # The store still serves the job.
    s = connect(port, deadline)
    if not handshake(s, secret):
        problems.append("after the attack the store refused the job's own secret")
    elif request(s, SET, b"attack/ok", b"yes")[0] != 0 or request(s, GET, b"attack/ok", b"") != (0, b"yes"):
        problems.append("after the attack SET/GET no longer work")
    s.close()

    for p in problems:
        print("store_attack: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
