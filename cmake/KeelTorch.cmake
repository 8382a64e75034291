# Debian's libtorch-dev (1.13), found by path: its TorchConfig.cmake probes for CUDA and
# Python on every configure. Sets KEEL_HAVE_TORCH and, when found, the imported target
# keel_libtorch (its headers, system headers as an imported target's are; torch, torch_cpu
# and c10). Offline: nothing is
# downloaded, no torch.utils.cpp_extension.
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
  set(KEEL_HAVE_TORCH ON)
  add_library(keel_libtorch INTERFACE IMPORTED)
  set_target_properties(keel_libtorch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${KEEL_TORCH_INCLUDE_DIR};${KEEL_TORCH_API_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${KEEL_TORCH_LIBRARY};${KEEL_TORCH_CPU_LIBRARY};${KEEL_C10_LIBRARY}")
else()
  set(KEEL_HAVE_TORCH OFF)
endif()
