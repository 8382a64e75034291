"""Shared fixtures: where the repository, the build and the shared traces are."""

import json
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(os.environ.get("KEEL_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TRACES = SOURCE.parent / "shared" / "traces" / "pytorch"
EXAMPLE = SOURCE / "examples" / "memory" / "train-varlen.pickle"


@pytest.fixture(scope="session")
def keel_exe():
    exe = os.environ.get("KEEL_EXE")
    if not exe or not os.path.exists(exe):
        pytest.skip("KEEL_EXE (the keel executable) is not set")
    return exe


@pytest.fixture(scope="session")
def traces():
    if not TRACES.is_dir():
        pytest.skip(f"shared traces not found at {TRACES}")
    return sorted(TRACES.glob("*.pickle"))


def run_cli(exe, *args):
    return subprocess.run([exe, *map(str, args)], capture_output=True, text=True)


def cli_json(exe, *args):
    """The --json document of a keel command that must succeed."""
    r = run_cli(exe, *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def cli_error(exe, *args):
    """The one-line message of a keel command that must fail with exit 2."""
    r = run_cli(exe, *args)
    assert r.returncode == 2, r.stdout
    assert r.stderr.startswith("keel: ") and r.stderr.count("\n") == 1, r.stderr
    return r.stderr[len("keel: "):].rstrip("\n")
