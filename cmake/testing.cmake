# SPDX-License-Identifier: MIT
# sniper_add_test(<name> SOURCES files... [LIBS libs...] [LABELS labels...])
# Builds a GoogleTest executable and registers it with ctest. Tests find ../shared through
# the SNIPER_SHARED_DIR environment variable (default: <source>/../shared).
set(SNIPER_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" CACHE PATH "The shared/ folder with models and references")
# CI's GCC build compiles the tests' own sources at -O1, not -O3 (the ci preset): a test's body is
# glue around library calls, and its compile time is half of the build. (-O0 under ASan was
# measured: it saved less build time than it added test time.)
set(SNIPER_TEST_OPT "" CACHE STRING "optimization flags for the tests' own sources, e.g. -O0 (default: the build type's)")
# The end-to-end suites (label golden: models from ../shared against llama.cpp's references) are
# left out of the sanitizer build, which does not run them.
option(SNIPER_E2E_TESTS "Build the end-to-end tests (label golden)" ON)
# Seconds each libFuzzer target runs under ctest (label fuzz, tests/fuzz); scripts/test.sh sets it for
# every preset, so it lives here, where a build without the fuzz targets still reads it.
set(SNIPER_FUZZ_SECONDS 20 CACHE STRING "seconds each libFuzzer target runs under ctest (label fuzz)")
set(SNIPER_FUZZ_SEED 1 CACHE STRING
    "libFuzzer -seed for the ctest fuzz runs: fixed so that a CI failure replays on any machine; 0 draws a new seed per run")
# A ;-list of unit tests to build instead of all of them (CI's sanitizer stage, preset ci-asan:
# the suites that handle untrusted bytes, files and buffers' lifetimes; the GCC stage runs all).
set(SNIPER_TEST_ONLY "" CACHE STRING "build only these sniper_add_test suites (empty: all)")

function(sniper_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT SNIPER_E2E_TESTS AND "golden" IN_LIST T_LABELS)
    return()
  endif()
  if(SNIPER_TEST_ONLY AND NOT name IN_LIST SNIPER_TEST_ONLY)
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  if(SNIPER_TEST_OPT)
    target_compile_options(${name} PRIVATE ${SNIPER_TEST_OPT})
  endif()
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES
    ENVIRONMENT "SNIPER_SHARED_DIR=${SNIPER_SHARED_DIR};SNIPER_BIN_DIR=${CMAKE_BINARY_DIR}"
    TIMEOUT ${T_TIMEOUT})
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
