#!/bin/sh
# libkeel_pluggable_alloc.so is loaded into PyTorch processes whose hosts (pip and conda
# installs) have none of the build machine's C++ libraries, so it may depend only on what
# every glibc system has: libc and glibc's libm, libdl, libpthread and librt, libstdc++,
# libgcc_s and the dynamic loader. The CUDA runtime is linked in statically and the driver
# (libcuda) is resolved at run time, so neither may appear. Fails, naming each other NEEDED
# entry (e.g. the distribution's libfmt.so.9). A sanitizer build (never shipped) also needs
# the sanitizers' runtimes: SANITIZED=1 allows them.
#
# usage: pluggable_deps_test.sh READELF LIBRARY [SANITIZED]
set -eu
readelf=$1
library=$2
sanitized=${3:-0}
if [ ! -f "$library" ]; then
  echo "FAIL: $library does not exist" >&2
  exit 1
fi
needed=$("$readelf" -d "$library" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p')
if [ -z "$needed" ]; then
  echo "FAIL: readelf found no NEEDED entries in $library (not a dynamic ELF library?)" >&2
  exit 1
fi
bad=""
for entry in $needed; do
  case "$entry" in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.*) ;;
    libstdc++.so.* | libgcc_s.so.*) ;;
    ld-linux*.so.* | ld64.so.*) ;;
    libasan.so.* | libubsan.so.* | libtsan.so.* | liblsan.so.*)
      [ "$sanitized" = 1 ] || bad="$bad $entry" ;;
    *) bad="$bad $entry" ;;
  esac
done
if [ -n "$bad" ]; then
  echo "FAIL: $library needs libraries a PyTorch host may not have:$bad" >&2
  echo "all NEEDED entries:" $needed >&2
  exit 1
fi
echo "ok: $library needs only:" $needed
