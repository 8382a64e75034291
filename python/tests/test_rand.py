"""keel.rand: cuRAND's numbers into numpy, equal to the CLI's bit for bit."""

import numpy as np
import pytest

import keel
from conftest import run_cli

CASES = {
    "raw": ("raw", {}, np.uint32),
    "uniform": ("uniform", {}, np.float32),
    "uniform-double": ("uniform", {"dtype": np.float64}, np.float64),
    "normal": ("normal", {"mean": 1.5, "stddev": 2.0}, np.float32),
    "normal-double": ("normal", {"mean": 1.5, "stddev": 2.0, "dtype": "float64"}, np.float64),
    "log-normal": ("log_normal", {"mean": 0.5, "stddev": 0.25}, np.float32),
    "log-normal-double": ("log_normal", {"mean": 0.5, "stddev": 0.25, "dtype": np.float64}, np.float64),
    "poisson": ("poisson", {"lam": 42.5}, np.uint32),
}


def cli_values(exe, tmp_path, gen, dist, n, extra):
    out = tmp_path / f"{gen}-{dist}.bin"
    args = ["rand", dist, "--generator", gen, "--count", n, "--format", "bin", "--out", out]
    for key, value in extra.items():
        if key == "dtype":
            continue
        args += [{"mean": "--mean", "stddev": "--stddev", "lam": "--lambda"}[key], value]
    if gen in ("sobol32", "scrambled_sobol32"):
        args += ["--dimensions", 4]
    else:
        args += ["--seed", 1234]
    r = run_cli(exe, *args)
    return r, out


@pytest.mark.parametrize("gen", keel.rand.GENERATORS)
def test_every_generator_and_distribution_equals_the_cli(keel_exe, tmp_path, gen):
    n = 4096
    for dist, (method, kwargs, dtype) in CASES.items():
        r, path = cli_values(keel_exe, tmp_path, gen, dist, n, kwargs)
        quasi = gen.endswith("sobol32")
        try:
            g = keel.rand.Generator(gen, dimensions=4) if quasi else keel.rand.Generator(gen, seed=1234)
            values = getattr(g, method)(n, **kwargs)
        except keel.InvalidArgument as e:
            assert r.returncode == 2, (gen, dist, str(e))
            continue
        except keel.BackendError:
            assert r.returncode != 0
            continue
        assert r.returncode == 0, (gen, dist, r.stderr)
        assert values.dtype == dtype
        np.testing.assert_array_equal(values, np.fromfile(path, dtype=dtype), err_msg=f"{gen} {dist}")


def test_a_generator_keeps_its_position():
    a = keel.rand.Generator("philox4_32_10", seed=7)
    b = keel.rand.Generator("philox4_32_10", seed=7)
    whole = a.normal(1 << 12)
    parts = np.concatenate([b.normal(1000), b.normal((1 << 12) - 1000)])
    np.testing.assert_array_equal(whole, parts)
    c = keel.rand.Generator("philox4_32_10", seed=7, offset=1000)
    np.testing.assert_array_equal(c.uniform(10), keel.rand.Generator("philox4_32_10", seed=7).uniform(1010)[1000:])


def test_out_arrays_are_filled_in_place_and_checked():
    g = keel.rand.Generator("xorwow", seed=3)
    buf = np.empty(1 << 10, dtype=np.float64)
    assert g.normal(out=buf) is not None
    np.testing.assert_array_equal(buf, keel.rand.Generator("xorwow", seed=3).normal(1 << 10, dtype=np.float64))
    with pytest.raises(keel.InvalidArgument):
        g.uniform(out=np.empty(8, dtype=np.int64))
    ro = np.empty(8, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(keel.InvalidArgument):
        g.uniform(out=ro)
    with pytest.raises(keel.InvalidArgument):
        g.uniform(out=np.empty((8, 2), dtype=np.float32)[:, 0])
    with pytest.raises(keel.InvalidArgument):
        g.uniform(-1)
    with pytest.raises(keel.InvalidArgument):
        g.normal(3)  # cuRAND's XORWOW normals come in pairs: LENGTH_NOT_MULTIPLE
    with pytest.raises(keel.InvalidArgument):
        keel.rand.Generator("mt19937", seed=1, offset=5)
    with pytest.raises(keel.InvalidArgument):
        keel.rand.Generator("sobol32", seed=1)
    with pytest.raises(ValueError):
        keel.rand.Generator("nope")
    with pytest.raises(TypeError):
        g.uniform("many")
