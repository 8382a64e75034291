# Debian's libtorch-dev (1.13), found by path: its TorchConfig.cmake probes for CUDA and
# Python on every configure. Sets KEEL_HAVE_TORCH and, when found, the imported target
# keel_libtorch (its headers, system headers as an imported target's are; torch, torch_cpu
# and c10). Offline: nothing is
# downloaded, no torch.utils.cpp_extension. Both are global (a cache variable, a GLOBAL
# imported target): the include guard makes every later include(KeelTorch) a no-op, so
# serve's backend and the Python package's torch backend must see what the first one set.
include_guard(GLOBAL)
find_path(KEEL_TORCH_INCLUDE_DIR torch/csrc/distributed/c10d/ProcessGroup.hpp
          PATHS /usr/include /usr/local/include)
find_path(KEEL_TORCH_API_INCLUDE_DIR torch/torch.h
          PATHS /usr/include/torch/csrc/api/include /usr/local/include/torch/csrc/api/include)
find_library(KEEL_TORCH_LIBRARY torch)
find_library(KEEL_TORCH_CPU_LIBRARY torch_cpu)
find_library(KEEL_C10_LIBRARY c10)
if(KEEL_TORCH_INCLUDE_DIR AND KEEL_TORCH_API_INCLUDE_DIR AND KEEL_TORCH_LIBRARY AND
   KEEL_TORCH_CPU_LIBRARY AND KEEL_C10_LIBRARY)
  set(KEEL_HAVE_TORCH ON CACHE INTERNAL "libtorch-dev found")
  add_library(keel_libtorch INTERFACE IMPORTED GLOBAL)
  set_target_properties(keel_libtorch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${KEEL_TORCH_INCLUDE_DIR};${KEEL_TORCH_API_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${KEEL_TORCH_LIBRARY};${KEEL_TORCH_CPU_LIBRARY};${KEEL_C10_LIBRARY}")
else()
  set(KEEL_HAVE_TORCH OFF CACHE INTERNAL "libtorch-dev found")
endif()
