#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the MTP draft head (src/model/mtp_head.*) against llama.cpp's MTP context on synthetic
# Qwen3.5 files with one nextn block (dense Q8_0 and MoE Q4_K_M): builds the reference llama.cpp
# with ../shared/tools/build-llama-cpp.sh (DEST, default /tmp/llama.cpp), compiles
# scripts/mtp-parity/mtp_reference.cpp against it, and compares its per-position MTP logits with
# `sniper logits --mtp -fa on` (flash attention is llama.cpp's default on the CPU). The dense file
# must match bit for bit, the MoE file within NMSE 1e-6 with every top-1 equal. On demand, not in
# CI (it builds llama.cpp). Needs build/ci's sniper.
# Usage: scripts/mtp-parity.sh [DEST]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SNIPER_SHARED_DIR:-$root/../shared}
bin=$(bash "$shared/tools/build-llama-cpp.sh" "${1:-/tmp/llama.cpp}" | tail -1)
src=$(cd "$bin/../.." && pwd)
sniper=$root/build/ci/bin/sniper
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -std=c++17 -O1 -I"$src/include" -I"$src/ggml/include" -I"$src/src" "$root/scripts/mtp-parity/mtp_reference.cpp" \
  -L"$bin" -lllama -lggml -lggml-base -Wl,-rpath,"$bin" -o "$work/mtp_reference"
ids=1,17,300,42,99,5,77,123,250,8,400,33,61,2,19,500
echo "[$ids]" >"$work/ids.json"
status=0
check() {  # name, bound ("exact" or an NMSE), synth flags...
  local name=$1 bound=$2
  shift 2
  "$sniper" synth "$@" --nextn 1 -o "$work/$name.gguf" >/dev/null
  "$work/mtp_reference" "$work/$name.gguf" "$ids" "$work/$name.ref.f32" 2>/dev/null
  "$sniper" logits -m "$work/$name.gguf" --prompt-ids "$work/ids.json" --mtp -fa on -o "$work/$name.ours.f32" 2>/dev/null
  python3 - "$work/$name.ref.f32" "$work/$name.ours.f32" 16 "$name" "$bound" <<'PY' || status=1
import struct, sys
def load(p):
    d = open(p, 'rb').read()
    return struct.unpack('<%df' % (len(d) // 4), d)
ref, ours, n, name, bound = load(sys.argv[1]), load(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
assert len(ref) == len(ours), 'row sizes differ'
v = len(ref) // n
worst, exact, top1 = 0.0, 0, 0
for i in range(n):
    a, b = ref[i * v:(i + 1) * v], ours[i * v:(i + 1) * v]
    worst = max(worst, sum((x - y) ** 2 for x, y in zip(a, b)) / sum(x * x for x in a))
    exact += a == b
    top1 += max(range(v), key=a.__getitem__) == max(range(v), key=b.__getitem__)
ok = exact == n if bound == 'exact' else (worst <= float(bound) and top1 == n)
print('%-10s %2d/%d rows bit-exact, worst NMSE %.3g, top-1 equal %d/%d: %s' % (name, exact, n, worst, top1, n, 'ok' if ok else 'FAIL'))
sys.exit(0 if ok else 1)
PY
}
check qwen35 exact --arch qwen35 --layers 4 --dim 256 --heads 4 --kv-heads 2 --head-dim 64 --ff 512 --type q8_0
check qwen35moe 1e-6 --arch qwen35moe --layers 4 --dim 256 --heads 4 --kv-heads 2 --head-dim 64 --experts 16 \
  --experts-active 4 --expert-ff 128 --shared-ff 128
exit $status
