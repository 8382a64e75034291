"""Builds keel's Python extension with the project's own CMake build.

`pip install --no-build-isolation .` configures and builds the `_keel` target in a build
directory of its own (or in KEEL_CMAKE_BUILD_DIR when set, e.g. an existing build tree) and
puts the extension next to the pure-Python files of python/keel. Only Debian's cmake, a C++
compiler and the -dev packages scripts/install-deps.sh names are needed; nothing is
downloaded.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(os.environ.get("KEEL_CMAKE_BUILD_DIR") or (pathlib.Path(self.build_temp) / "cmake"))
        build.mkdir(parents=True, exist_ok=True)
        if not (build / "CMakeCache.txt").exists():
            subprocess.check_call([
                "cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja" if shutil.which("ninja") else "Unix Makefiles",
                "-DCMAKE_BUILD_TYPE=Release", "-DKEEL_BUILD_TESTS=OFF", "-DKEEL_BUILD_BENCH=OFF",
                "-DKEEL_ENABLE_CUDA=OFF", f"-DKEEL_PYTHON={sys.executable}",
            ])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "_keel", "--parallel", str(os.cpu_count() or 2)])
        built = next((build / "python" / "keel").glob("_keel*.so"))
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)
        # keel serve's TorchScript backend, a module the extension loads from its own folder.
        backend = built.parent / "libkeel_serve_torchscript.so"
        if backend.exists():
            shutil.copy2(backend, target.parent / backend.name)


setup(ext_modules=[CMakeExtension("keel._keel")], cmdclass={"build_ext": CMakeBuild})
