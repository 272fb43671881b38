# SPDX-License-Identifier: MIT
# Per-file ISA flags: each ISA's kernels live in their own translation units and only those get
# the ISA's -m flags. The default build never uses -march=native or a global -mavx2.
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
