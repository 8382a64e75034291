#!/usr/bin/env python3
"""Writes src/random/tables/data/sobol_joe_kuo_6.bin, keel's packed copy of S. Joe and F. Y. Kuo's
published Sobol' direction numbers (new-joe-kuo-6.21201, search criterion 6), for the 20000
dimensions cuRAND's 32-bit Sobol generators support.

Input: the same published numbers as SciPy ships them (scipy/stats/_sobol_direction_numbers.npz,
arrays 'poly' (21201,) and 'vinit' (21201, 18)); on Debian install python3-scipy and run this
with Debian's /usr/bin/python3. Only this script needs SciPy: the build and the tests read the
committed .bin file. The output is deterministic: rerun and `git diff` shows no change.

Format (see src/random/tables/data/README.md): the 8 bytes "sobolJK6", the dimension count as a
little-endian uint32, then a bit stream (least significant bit first within each byte) with,
for dimensions 2..count in order, the degree s (5 bits), the polynomial's inner coefficients
a (s - 1 bits) and, for k = 1..s, (m_k - 1) / 2 in k - 1 bits (every m_k is odd and < 2^k).

Usage: scripts/sobol-direction-numbers.py [--npz FILE] [--dimensions N] [--out FILE]
"""
import argparse
import os
import sys

import numpy as np

MAGIC = b"sobolJK6"


def default_npz():
    import scipy

    return os.path.join(os.path.dirname(scipy.__file__), "stats", "_sobol_direction_numbers.npz")


def pack(poly, vinit, dimensions):
    bits = []  # (value, width) pairs

    for d in range(1, dimensions):  # row 0 is dimension 1 (van der Corput), implicit
        p = int(poly[d])
        s = p.bit_length() - 1
        if not 1 <= s < 32:
            raise ValueError(f"dimension {d + 1}: degree {s} out of range")
        a = (p >> 1) & ((1 << (s - 1)) - 1)
        if p != (1 << s) | (a << 1) | 1:
            raise ValueError(f"dimension {d + 1}: polynomial {p} lacks its constant term")
        bits.append((s, 5))
        bits.append((a, s - 1))
        for k in range(1, s + 1):
            m = int(vinit[d][k - 1])
            if m % 2 != 1 or m >= 1 << k:
                raise ValueError(f"dimension {d + 1}: m_{k} = {m} is not odd and below 2^{k}")
            bits.append((m >> 1, k - 1))
        if any(int(v) != 0 for v in vinit[d][s:]):
            raise ValueError(f"dimension {d + 1}: values beyond the degree")
    out = bytearray(MAGIC + dimensions.to_bytes(4, "little"))
    acc = nacc = 0
    for value, width in bits:
        acc |= value << nacc
        nacc += width
        while nacc >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            nacc -= 8
    if nacc:
        out.append(acc)
    return bytes(out)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npz", help="SciPy's _sobol_direction_numbers.npz (default: the installed SciPy's)")
    ap.add_argument("--dimensions", type=int, default=20000)
    ap.add_argument("--out", default=os.path.join(root, "src", "random", "tables", "data", "sobol_joe_kuo_6.bin"))
    args = ap.parse_args()
    data = np.load(args.npz or default_npz())
    poly, vinit = data["poly"], data["vinit"]
    if not 1 <= args.dimensions <= len(poly):
        sys.exit(f"sobol-direction-numbers: --dimensions must be 1..{len(poly)}")
    blob = pack(poly, vinit, args.dimensions)
    with open(args.out, "wb") as f:
        f.write(blob)
    print(f"wrote {args.out}: {args.dimensions} dimensions, {len(blob)} bytes")


if __name__ == "__main__":
    main()
