# SPDX-License-Identifier: MIT
# Per-file ISA flags: each ISA's kernels live in their own translation units and only those get
# the ISA's -m flags. The default build never uses -march=native or a global -mavx2.
# SNIPER_ARCH (x86_64 or aarch64) picks which ISA families are compiled at all; it follows the
# target (CMAKE_SYSTEM_PROCESSOR), so a cross build (cmake/aarch64-linux-gnu.cmake) and a native
# aarch64 build both get the aarch64 set with no flags.
string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" _sniper_cpu)
# SNIPER_ISA_TIERS lists that architecture's kernel tiers, lowest first (the SNIPER_ISA names,
# base/cpu_features.h); tests that run once per tier (tests/golden) take them from here.
if(_sniper_cpu MATCHES "^(x86_64|amd64)$")
  set(SNIPER_ARCH x86_64)
  set(SNIPER_ISA_TIERS ref avx2 avx512)
elseif(_sniper_cpu MATCHES "^(aarch64|arm64)$")
  set(SNIPER_ARCH aarch64)
  set(SNIPER_ISA_TIERS ref)
  # FMA is part of the aarch64 baseline and GCC contracts a * b + c into one in C++ by default
  # (-ffp-contract=fast; only ISO C turns it off), which changes the scalar reference's roundings:
  # the ref tier must compute what it computes on x86-64, bit for bit (tests/golden).
  add_compile_options(-ffp-contract=off)
else()
  message(FATAL_ERROR "Sniper builds for x86-64 and aarch64; CMAKE_SYSTEM_PROCESSOR is '${CMAKE_SYSTEM_PROCESSOR}'")
endif()
# -ffp-contract=off: the kernels reproduce the reference engine's float operations exactly, so
# every fused multiply-add is spelled out (intrinsics, std::fma); the compiler must add none.
set(SNIPER_AVX2_FLAGS -mavx2 -mfma -mf16c -ffp-contract=off)
set(SNIPER_AVX512_FLAGS -ffp-contract=off -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16)
# Optional extensions of the AVX-512 tier: their files' entries are patched in only on hosts that
# have them (kernels/dispatch.cpp).
set(SNIPER_AVX512VBMI_FLAGS ${SNIPER_AVX512_FLAGS} -mavx512vbmi)

# sniper_isa_sources(<avx2|avx512|avx512vbmi> files...): marks the files as compiled for that ISA.
function(sniper_isa_sources isa)
  if(isa STREQUAL "avx2")
    set(flags ${SNIPER_AVX2_FLAGS})
  elseif(isa STREQUAL "avx512")
    set(flags ${SNIPER_AVX512_FLAGS})
  elseif(isa STREQUAL "avx512vbmi")
    set(flags ${SNIPER_AVX512VBMI_FLAGS})
  else()
    message(FATAL_ERROR "unknown ISA ${isa}")
  endif()
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${flags}")
endfunction()
