#!/usr/bin/env bash
# Installs every Debian package keel's build, tests and benchmarks use. Idempotent: when all
# are present it only checks (well under a second). Run as root (or with sudo available).
# The CUDA toolkit is not a Debian package; when it is installed, CMake finds nvcc and keel's
# CUDA sources are compiled too.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ make pkg-config
  # libraries keel builds against
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libfmt-dev libcli11-dev
  libxxhash-dev libonnx-dev libprotobuf-dev protobuf-compiler
  # Python module and Python-side tests (Debian's own python3)
  python3 python3-dev pybind11-dev python3-pytest python3-numpy python3-pandas
  python3-setuptools python3-pip python3-venv
  python3-torch python3-torchvision python3-onnx libtorch-dev
  # an optimized BLAS under libtorch's GEMMs (Debian's default libblas3 is the reference one,
  # ~15x slower on every nn.Linear); the OpenMP build follows each thread's OpenMP setting,
  # which is how keel serve shares its thread budget
  libopenblas0-openmp
  # keel::serve: the HTTP front; its benchmarks' load tool and Python peer server
  libcpp-httplib-dev wrk python3-flask
  # keel.dist: jobs on Dask and Celery (a Redis broker), and their tests' services
  python3-distributed python3-celery python3-redis redis-server
  # OpenCL on the CPU
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers
  # peers for side-by-side benchmarks and tests
  openmpi-bin libopenmpi-dev libjemalloc-dev libmimalloc-dev dieharder
  # headless rendering of the HTML reports; lint
  chromium clang-format clang-tidy
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -o DPkg::Lock::Timeout=600 update -qq
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
