#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds ggml's CPU backend from the shared llama.cpp snapshot (read in place from
# $SNIPER_SHARED_DIR or ../shared; extracted and built under WORK, default /tmp/sniper-ggml-parity,
# native ISA as the references were made) and checks the hybrid architectures' kernels against
# ggml's CPU ops bit for bit (scripts/ggml-parity/hybrid_kernels_parity.cpp). Needs build/ci's
# kernel library: cmake --preset ci && cmake --build build/ci --target sniper_kernels.
# Usage: scripts/ggml-parity.sh [WORK]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SNIPER_SHARED_DIR:-$root/../shared}
work=${1:-/tmp/sniper-ggml-parity}
ggml=$work/llama.cpp-d32676d77/ggml
if [ ! -f "$ggml/build/src/libggml-cpu.a" ]; then
  mkdir -p "$work"
  tar -xJf "$shared/tools/llama.cpp-d32676d77.tar.xz" -C "$work" llama.cpp-d32676d77/ggml
  touch "$ggml/ggml.pc.in"  # absent from the snapshot; only ggml's install rules read it
  cmake -S "$ggml" -B "$ggml/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DGGML_BACKEND_DL=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_OPENMP=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$ggml/build" --target ggml-cpu ggml-base >/dev/null
fi
lib=$root/build/ci/src
g++ -std=c++20 -O2 -I"$ggml/include" -I"$root/src" "$root/scripts/ggml-parity/hybrid_kernels_parity.cpp" \
  -o "$work/hybrid_kernels_parity" "$lib/kernels/libsniper_kernels.a" "$lib"/quant/*.a "$lib"/gguf/*.a \
  "$lib"/base/*.a "$ggml/build/src/libggml-cpu.a" "$ggml/build/src/libggml-base.a" -lpthread -lm
"$work/hybrid_kernels_parity"
