# SPDX-License-Identifier: MIT
# sniper_add_test(<name> SOURCES files... [LIBS libs...] [LABELS labels...])
# Builds a GoogleTest executable and registers it with ctest. Tests find ../shared through
# the SNIPER_SHARED_DIR environment variable (default: <source>/../shared).
set(SNIPER_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" CACHE PATH "The shared/ folder with models and references")

function(sniper_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
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
