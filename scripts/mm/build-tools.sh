#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the media reference tools against the llama.cpp snapshot's libmtmd (built by
# ../shared/tools/build-llama-cpp.sh): ../shared/tools/mm/dump_mtmd.cpp (the media references'
# dumper), scripts/mm/dump_mtmd_tensors.cpp (the encoder's input tensor and graph nodes) and
# scripts/mm/mtmd_ttft.cpp (libmtmd's encode time and time to first token, for bench/mm_bench.sh).
# Usage: scripts/mm/build-tools.sh [LLAMA_SRC] [OUT_DIR]
#   LLAMA_SRC default /work/llama.cpp/llama.cpp-d32676d77, OUT_DIR default /tmp/sniper-mm-tools.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${SNIPER_SHARED_DIR:-$root/../shared}
L=${1:-/work/llama.cpp/llama.cpp-d32676d77}
out=${2:-/tmp/sniper-mm-tools}
mkdir -p "$out"
flags=(-O2 -std=c++17 -I"$L/include" -I"$L/ggml/include" -I"$L/tools/mtmd" -L"$L/build/bin" -lmtmd -lllama -lggml
       -lggml-base -Wl,-rpath,"$L/build/bin")
g++ "$shared/tools/mm/dump_mtmd.cpp" -o "$out/dump_mtmd" "${flags[@]}"
g++ "$root/scripts/mm/dump_mtmd_tensors.cpp" -o "$out/dump_mtmd_tensors" "${flags[@]}"
g++ "$root/scripts/mm/mtmd_ttft.cpp" -o "$out/mtmd_ttft" "${flags[@]}"
echo "$out"
