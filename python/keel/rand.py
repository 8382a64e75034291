"""keel.rand — cuRAND's host generators bit for bit, into numpy arrays.

    g = keel.rand.Generator("philox4_32_10", seed=42)
    x = g.normal(1 << 20)                  # float32, as curandGenerateNormal
    g.uniform(out=buf)                     # fills a float32/float64 array in place

Generators: philox4_32_10, xorwow, mrg32k3a, mtgp32, mt19937, sobol32, scrambled_sobol32.
Orderings: default, best, legacy, seeded, dynamic (quasi_default for Sobol'). A generator keeps
its position across calls as cuRAND's does: two calls of n equal one call of 2n. The GIL is
released while generating. cuRAND's refusals (an odd count of XORWOW normals, an offset for
MT19937, ...) raise keel.InvalidArgument naming cuRAND's status.
"""

from ._keel import rand as _rand

Generator = _rand.Generator
simd_level = _rand.simd_level
GENERATORS = ("philox4_32_10", "xorwow", "mrg32k3a", "mtgp32", "mt19937", "sobol32", "scrambled_sobol32")

__all__ = ["Generator", "GENERATORS", "simd_level"]
