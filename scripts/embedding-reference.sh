#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Re-makes tests/golden/embedding/reference.txt (issue 42): llama.cpp's embeddings of the inputs in
# tests/golden/embedding/inputs.txt from a synthetic qwen3 embedding model (pooling_type last),
# with the file's pooling and with --pooling mean and cls, L2-normalised (llama-embedding's
# default). tests/golden/embedding_test.cpp writes the same model (the same SynthSpec as the flags
# below) and checks Sniper's embeddings against these (cosine >= 0.99999). On demand, not in CI.
# Usage: scripts/embedding-reference.sh SNIPER LLAMA_BIN
#   SNIPER: a sniper binary (its `synth`); LLAMA_BIN: the snapshot build's bin folder
#   (llama-embedding and its libraries), e.g. /work/llama.cpp/llama.cpp-d32676d77/build/bin.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sniper=$1 bin=$2
out=$root/tests/golden/embedding
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$sniper" synth --arch qwen3 --dim 128 --layers 2 --heads 4 --kv-heads 2 --head-dim 32 --ff 256 --type q8_0 \
  --seed 42 --pooling last -o "$work/emb-qwen3.gguf" >/dev/null
: >"$work/reference.txt"
for pooling in last mean cls; do
  LD_LIBRARY_PATH=$bin "$bin/llama-embedding" -m "$work/emb-qwen3.gguf" -f "$out/inputs.txt" -t 2 \
    --pooling "$pooling" --embd-output-format json --verbose-prompt >"$work/$pooling.json" 2>"$work/$pooling.log"
  python3 - "$pooling" "$work/$pooling.json" "$work/$pooling.log" >>"$work/reference.txt" <<'PY'
import json, re, sys
text = open(sys.argv[2]).read()  # --verbose-prompt lists the tokens on stdout before the JSON
pooling, data, log = sys.argv[1], json.loads(text[text.index("\n{") + 1:]), open(sys.argv[3]).read()
counts = [int(n) for n in re.findall(r"number of tokens in prompt = (\d+)", log)]
assert len(counts) == len(data["data"]), (counts, len(data["data"]))
for item, n in zip(data["data"], counts):
    print(pooling, item["index"], n, " ".join("%.7g" % v for v in item["embedding"]))
PY
done
mv "$work/reference.txt" "$out/reference.txt"
echo "wrote $out/reference.txt ($(wc -l <"$out/reference.txt") vectors)"
