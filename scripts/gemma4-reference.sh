#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Re-makes tests/golden/gemma4_q4km/<model>/ (issue 41): quantizes the shared F32 gemma4 fixtures
# with the snapshot's llama-quantize (Q4_K_M), lists each tensor's type and digest
# (scripts/gguf-tensor-digests.py), and dumps llama.cpp's logits for the committed prompt_ids /
# gen_ids with scripts/gemma4-reference/dump_logits.cpp. On demand, not in CI.
# LIB holds the snapshot's libraries as the host that made ../shared/reference had them: a
# standard build's libllama, libggml and libggml-base (built for the baseline x86-64, no FMA),
# beside a libggml-cpu built for this host WITHOUT AVX512-FP16 (a host that has it accumulates
# ggml_vec_dot_f16 in half precision for single-token steps). Compiling libggml-base with
# -march=native is wrong too: GCC then contracts quantize_row_q8_K_ref's iscale * x + 1.5 * 2^23
# into an FMA and rounds some activations to another integer (docs/gemma4-parity.md). E.g.:
#   cmake -S $SRC -B $B -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
#     -DCMAKE_C_FLAGS='-march=native -mno-avx512fp16' -DCMAKE_CXX_FLAGS='-march=native -mno-avx512fp16'
#   cmake --build $B --target ggml-cpu -j
#   mkdir $LIB; cp -a $STANDARD/bin/lib{llama,ggml,ggml-base}.so* $B/bin/libggml-cpu.so* $LIB
# Before trusting LIB, check that it reproduces ../shared/reference (the script does).
# Usage: scripts/gemma4-reference.sh SRC LIB QUANTIZE
#   SRC: the llama.cpp snapshot's source; LIB: the folder with libllama.so and libggml*.so;
#   QUANTIZE: the snapshot's llama-quantize.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SNIPER_SHARED_DIR:-$root/../shared}
src=$1 lib=$2 quantize=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++17 -O1 -I"$src/include" -I"$src/ggml/include" "$root/scripts/gemma4-reference/dump_logits.cpp" \
  -L"$lib" -lllama -lggml -lggml-base -Wl,-rpath,"$lib" -o "$work/dump_logits"
# libllama's RUNPATH names its own build folder: LD_LIBRARY_PATH makes LIB's libraries win.
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for model in syn-qwen3-Q4_K_M syn-gemma4moe-small; do
  ref=$shared/reference/$model
  "$work/dump_logits" "$shared/models/$model.gguf" "$ref/prompt_ids.json" "$ref/gen_ids.json" "$work/check.f32" 2>/dev/null
  if ! cat "$ref/prompt_logits.f32" "$ref/gen_logits.f32" | cmp -s - "$work/check.f32"; then
    echo "$lib does not reproduce ../shared/reference/$model: not a reference build" >&2
    exit 1
  fi
done
for model in syn-gemma4moe-small syn-gemma4e-small; do
  out=$root/tests/golden/gemma4_q4km/$model
  "$quantize" "$shared/models/$model.gguf" "$work/$model-Q4_K_M.gguf" Q4_K_M 2 >/dev/null 2>&1
  python3 "$root/scripts/gguf-tensor-digests.py" "$work/$model-Q4_K_M.gguf" >"$out/tensors.json"
  "$work/dump_logits" "$work/$model-Q4_K_M.gguf" "$out/prompt_ids.json" "$out/gen_ids.json" "$out/logits.f32" 2>/dev/null
  echo "$model: $(stat -c %s "$out/logits.f32") bytes of logits"
done
