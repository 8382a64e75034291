# Helpers that keep each module's CMakeLists.txt short and uniform.

# keel_add_module(NAME [SOURCES ...] [DEPENDS ...] [PRIVATE_DEPENDS ...])
# Creates keel_NAME (alias keel::NAME), exported and installed; sources default to src/NAME/*.cpp.
function(keel_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  if(NOT ARG_SOURCES)
    file(GLOB ARG_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  endif()
  # A module whose sources have not landed yet is a header-only (INTERFACE) library.
  if(ARG_SOURCES)
    add_library(keel_${name} ${ARG_SOURCES})
    set(scope PUBLIC)
    target_compile_options(keel_${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic>)
    set_target_properties(keel_${name} PROPERTIES OUTPUT_NAME keel_${name})
  else()
    add_library(keel_${name} INTERFACE)
    set(scope INTERFACE)
  endif()
  add_library(keel::${name} ALIAS keel_${name})
  set_target_properties(keel_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(keel_${name} ${scope}
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(keel_${name} ${scope} cxx_std_20)
  if(ARG_DEPENDS)
    target_link_libraries(keel_${name} ${scope} ${ARG_DEPENDS})
  endif()
  if(ARG_PRIVATE_DEPENDS)
    target_link_libraries(keel_${name} PRIVATE ${ARG_PRIVATE_DEPENDS})
  endif()
  install(TARGETS keel_${name} EXPORT keelTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# keel_precompile(TARGET HEADER ...): with KEEL_PCH (every preset sets it), TARGET's sources
# see these (system) headers precompiled: every test TU would parse GoogleTest, nlohmann-json
# and fmt again otherwise. clang cannot read GCC's precompiled headers: scripts/lint.sh drops
# them from the compile commands it gives clang-tidy. The headers are included first in every
# source of the target, so they must not depend on what a source defines before them.
function(keel_precompile target)
  if(KEEL_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# keel_test_target(TARGET): what every GoogleTest program gets: KEEL_TEST_COMPILE_OPTIONS and
# keel_precompile with the headers every suite uses.
function(keel_test_target target)
  target_compile_options(${target} PRIVATE ${KEEL_TEST_COMPILE_OPTIONS})
  keel_precompile(${target} <gtest/gtest.h> <nlohmann/json.hpp> <fmt/format.h> <string> <vector>)
endfunction()

# keel_add_module_tests(MODULE [TARGET NAME] [LIBS ...] [LABELS ...] [SOURCES ...])
# One GoogleTest executable per module (tests/MODULE/*_test.cpp by default; TARGET names a
# second program of the module, default keel_MODULE_tests), each test registered with CTest
# and labelled with the module name. Tests see KEEL_SOURCE_DIR and
# KEEL_SHARED_DIR (the ../shared data folder, which may be absent).
function(keel_add_module_tests module)
  cmake_parse_arguments(ARG "" "TARGET" "LIBS;LABELS;SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    file(GLOB ARG_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cpp)
  endif()
  if(NOT ARG_SOURCES)
    return()
  endif()
  set(target keel_${module}_tests)
  if(ARG_TARGET)
    set(target ${ARG_TARGET})
  endif()
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE keel::${module} ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  keel_test_target(${target})
  target_compile_definitions(${target} PRIVATE
    KEEL_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    KEEL_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared"
    KEEL_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${target}
    PROPERTIES LABELS "${module};${ARG_LABELS}"
    DISCOVERY_TIMEOUT 60)
endfunction()

# keel_add_bench(NAME SOURCES ... [LIBS ...]): a Google Benchmark program.
function(keel_add_bench name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} benchmark::benchmark benchmark::benchmark_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/bench/support)
endfunction()
