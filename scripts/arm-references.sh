#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ARM references (issue 45): llama.cpp's ARM kernels sum in another order than its x86 ones, so
# the aarch64 SIMD tiers are checked against what llama.cpp computes on aarch64, not against
# ../shared/reference. This cross-compiles the shared llama.cpp snapshot for aarch64 once per
# tier (GGML_NATIVE=OFF, -march below; the llama library is the same for every tier, ccache
# shares it), builds scripts/arm-references/reference_logits.cpp against it, and runs every case
# of ../shared/reference (the short prompts, reference/iq and reference/kv) under
# qemu-aarch64 -cpu max with the references' protocol, teacher-forced on their gen_ids. It writes
# one file per tier, tests/golden/arm_reference/<tier>.json: for every case and row, a 64-bit
# FNV-1a hash of the row's float32 bytes (what a bit-exact check needs; the NMSE checks read the
# shared x86 rows). On demand, not in CI: hours of qemu on two cores.
# Usage: scripts/arm-references.sh [WORK]   (default /work/big/arm/llama-arm; needs
#        scripts/install-deps.sh's cross toolchain and qemu)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SNIPER_SHARED_DIR:-$root/../shared}
work=${1:-/work/big/arm/llama-arm}
src=$work/llama.cpp-d32676d77
# Tier -> llama.cpp's target ISA. neon: the ARMv8.0 baseline (Cortex-A53/A72); dotprod: ARMv8.2
# with SDOT and FP16 arithmetic (Cortex-A76 / Raspberry Pi 5, Apple M1); i8mm: ARMv8.6 with SMMLA
# (Apple M2+, Graviton3 without its SVE, Cortex-A710+). No SVE: Sniper has no SVE tier.
declare -A march=([neon]=armv8-a [dotprod]=armv8.2-a+dotprod+fp16 [i8mm]=armv8.6-a+dotprod+i8mm+fp16)
tiers=${SNIPER_ARM_TIERS:-neon dotprod i8mm}
mkdir -p "$work" "$root/tests/golden/arm_reference"
[ -d "$src/ggml" ] || tar -xJf "$shared/tools/llama.cpp-d32676d77.tar.xz" -C "$work"
qemu=(qemu-aarch64-static -cpu max)
for tier in $tiers; do
  build=$work/build-$tier
  if [ ! -f "$build/bin/libllama.so" ]; then
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" -DCMAKE_C_COMPILER_LAUNCHER=ccache \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DGGML_NATIVE=OFF -DGGML_CPU_ARM_ARCH="${march[$tier]}" \
      -DGGML_OPENMP=OFF -DGGML_BACKEND_DL=OFF -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF \
      -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF >/dev/null
    cmake --build "$build" --target llama >/dev/null
  fi
  aarch64-linux-gnu-g++ -std=c++17 -O1 -I"$src/include" -I"$src/ggml/include" \
    "$root/scripts/arm-references/reference_logits.cpp" -L"$build/bin" -lllama -lggml -lggml-base \
    -Wl,-rpath,"$build/bin" -o "$build/reference_logits"
  out=$work/out-$tier
  mkdir -p "$out"
  run_case() {  # name model ref_dir [type_k type_v flash]
    local name=$1 model=$2 ref=$3
    shift 3
    [ -f "$out/$name.gen.f32" ] && return 0
    "${qemu[@]}" "$build/reference_logits" "$shared/models/$model" "$ref/prompt_ids.json" "$ref/gen_ids.json" \
      "$out/$name.prompt.f32" "$out/$name.gen.f32.tmp" "$@" 2>"$out/$name.log"
    mv "$out/$name.gen.f32.tmp" "$out/$name.gen.f32"
    echo "$tier $name"
  }
  for ref in "$shared"/reference/*/ "$shared"/reference/iq/*/; do
    ref=${ref%/}
    [ -f "$ref/meta.json" ] || continue
    model=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_file"])' "$ref/meta.json")
    name=${ref#"$shared/reference/"}
    [[ $name == iq/* ]] && model=iq/$model
    run_case "${name//\//_}" "$model" "$ref"
  done
  for ref in "$shared"/reference/kv/*/*/; do
    ref=${ref%/}
    model=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["model_file"])' "$ref/meta.json")
    read -r tk tv fa < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["settings"]; print(s["type_k"], s["type_v"], int(bool(s["flash_attn"])))' "$ref/meta.json")
    name=${ref#"$shared/reference/"}
    if [[ $name == *-norot ]]; then
      LLAMA_ATTN_ROT_DISABLE=1 run_case "${name//\//_}" "$model" "$ref" "$tk" "$tv" "$fa"
    else
      run_case "${name//\//_}" "$model" "$ref" "$tk" "$tv" "$fa"
    fi
  done
  python3 "$root/scripts/arm-references/hash_rows.py" "$out" "$tier" >"$root/tests/golden/arm_reference/$tier.json"
done
