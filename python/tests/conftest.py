"""Shared fixtures: where the repository, the build and the shared traces are."""

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
