"""The package itself: errors, python3 -m keel, and the three ways to install it."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import venv

import pytest

import keel
from conftest import EXAMPLE, SOURCE, run_cli


def test_errors_derive_from_keel_error_and_the_standard_classes():
    assert issubclass(keel.ParseError, keel.Error) and issubclass(keel.ParseError, ValueError)
    assert issubclass(keel.InvalidArgument, ValueError)
    assert issubclass(keel.OutOfMemoryError, MemoryError)
    assert issubclass(keel.IOError, OSError)
    assert issubclass(keel.CommTimeoutError, TimeoutError) and issubclass(keel.CommTimeoutError, keel.CommError)


@pytest.mark.parametrize("args", [["mem", "replay", str(EXAMPLE)], ["mem", "replay", "/no/such"],
                                  ["rand", "normal", "--count", "5"], ["--bogus"], ["--version"]])
def test_python_m_keel_is_the_cli(keel_exe, args):
    env = dict(os.environ)
    native = run_cli(keel_exe, *args)
    py = subprocess.run([sys.executable, "-m", "keel", *args], capture_output=True, text=True, env=env)
    assert py.returncode == native.returncode
    assert py.stdout == native.stdout
    assert py.stderr == native.stderr


def test_python_m_keel_starts_its_ranks_as_python_m_keel():
    # comm verify runs its ranks by starting the command line again: python3 -m keel, not keel.
    r = subprocess.run([sys.executable, "-m", "keel", "comm", "verify", "-N", "2", "--max-bytes", "4K", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ranks"] == 2 and doc["cases"] > 100 and doc["failed"] == []


def _build_dir():
    b = os.environ.get("KEEL_BINARY_DIR")
    if not b:
        pytest.skip("KEEL_BINARY_DIR is not set")
    return pathlib.Path(b)


def test_cmake_install(tmp_path):
    build = _build_dir()
    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix), "--component", "python"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    inits = list(prefix.rglob("keel/__init__.py"))
    assert len(inits) == 1
    site = inits[0].parent.parent
    code = "import keel, sys; print(keel.__file__); print(keel.rand.Generator('philox4_32_10', seed=1).raw(2))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": str(site), "PATH": os.environ.get("PATH", "")}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert str(site) in r.stdout.splitlines()[0]


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")
def test_pip_install_into_a_venv(tmp_path):
    build = _build_dir()
    env_dir = tmp_path / "venv"
    venv.create(env_dir, system_site_packages=True, with_pip=False)
    py = env_dir / "bin" / "python"
    # Debian's pip (system site packages) installs into the venv; the build reuses this build tree.
    env = dict(os.environ, KEEL_CMAKE_BUILD_DIR=str(build), PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    # What setup.py reads, copied so that pip's in-tree build files stay out of the repository
    # (with KEEL_CMAKE_BUILD_DIR the CMake sources are not read again).
    src = tmp_path / "src"
    (src / "python").mkdir(parents=True)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(SOURCE / name, src / name)
    shutil.copytree(SOURCE / "python" / "keel", src / "python" / "keel",
                    ignore=shutil.ignore_patterns("__pycache__"))
    r = subprocess.run([str(py), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-q", str(src)],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(py), "-c", "import keel; print(keel.__file__, keel.__version__)"],
                       capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert str(env_dir) in r.stdout
