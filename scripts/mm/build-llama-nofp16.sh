#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds libmtmd (and libllama, libggml) from the shared llama.cpp snapshot for AVX-512 without
# AVX512-FP16, the build tests/media/reference is made with (scripts/mm/make_references.py).
# Why: a native build on a CPU with AVX512-FP16 (Sapphire Rapids and later) compiles
# ggml_vec_dot_f16 with native half-precision FMAs, so f16 dot products outside tinyBLAS (an f16
# matmul whose row count is not a multiple of 4: an image's patch embedding for most sizes;
# single-row products) accumulate in f16 there and in f32 everywhere else. The shared references
# and Sniper follow the f32 accumulation.
# Usage: scripts/mm/build-llama-nofp16.sh [DEST]   (default /work/big/mm/llama-nofp16); prints the source folder.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${SNIPER_SHARED_DIR:-$here/../../../shared}
dest=${1:-/work/big/mm/llama-nofp16}
src=$dest/llama.cpp-d32676d77
if [ ! -f "$src/build/bin/libmtmd.so" ]; then
  mkdir -p "$dest"
  [ -d "$src/tools/mtmd" ] || tar -xJf "$shared/tools/llama.cpp-d32676d77.tar.xz" -C "$dest"
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF >/dev/null
  cmake --build "$src/build" -j "$(nproc)" --target mtmd >/dev/null
fi
echo "$src"
