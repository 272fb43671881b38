#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Re-makes tests/golden/gemma4_q4km/<model>/ (issue 41): quantizes the shared F32 gemma4 fixtures
# with the snapshot's llama-quantize (Q4_K_M), lists each tensor's type and digest
# (scripts/gguf-tensor-digests.py), and dumps llama.cpp's logits for the committed prompt_ids /
# gen_ids with scripts/gemma4-reference/dump_logits.cpp. On demand, not in CI.
# LIB is a build of the snapshot's libllama WITHOUT AVX512-FP16 (a host that has it would
# otherwise accumulate ggml_vec_dot_f16 in half precision for single-token steps, which the
# host that made ../shared/reference did not: see docs/gemma4-parity.md), e.g.
#   cmake -S $SRC -B $B -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
#     -DCMAKE_C_FLAGS='-march=native -mno-avx512fp16' -DCMAKE_CXX_FLAGS='-march=native -mno-avx512fp16'
#   cmake --build $B --target llama -j
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
for model in syn-gemma4moe-small syn-gemma4e-small; do
  out=$root/tests/golden/gemma4_q4km/$model
  "$quantize" "$shared/models/$model.gguf" "$work/$model-Q4_K_M.gguf" Q4_K_M 2 >/dev/null 2>&1
  python3 "$root/scripts/gguf-tensor-digests.py" "$work/$model-Q4_K_M.gguf" >"$out/tensors.json"
  "$work/dump_logits" "$work/$model-Q4_K_M.gguf" "$out/prompt_ids.json" "$out/gen_ids.json" "$out/logits.f32" 2>/dev/null
  echo "$model: $(stat -c %s "$out/logits.f32") bytes of logits"
done
