#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions executed (callgrind, deterministic) by two sniper binaries on the same runs, for a
# refactor that must not slow the engine down (issue 45 step 1, the per-tier dispatch record):
# `sniper logits` on syn-qwen3-Q4_K_M's 256-token KV reference prompt + 32 teacher-forced ids,
# one thread, at every x86 tier the host has, with the f16 cache (no flash attention) and with a
# q8_0 cache under flash attention (the attention fast paths of the record). Also checks that the
# two binaries write the same logits, bit for bit.
# Usage: bench/arm/dispatch-callgrind.sh BEFORE_SNIPER AFTER_SNIPER [TIERS]   (default: ref avx2 avx512)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
shared=${SNIPER_SHARED_DIR:-$root/../shared}
before=$1
after=$2
tiers=${3:-ref avx2 avx512}
ref=$shared/reference/kv/syn-qwen3-Q4_K_M/f16-fa0
model=$shared/models/syn-qwen3-Q4_K_M.gguf
work=$(mktemp -d /var/tmp/sniper-cg.XXXXXX)
trap 'rm -rf "$work"' EXIT
count() {  # binary, tier, logits file, extra flags...
  local bin=$1 tier=$2 out=$3
  shift 3
  SNIPER_ISA=$tier valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$bin" logits -m "$model" -t 1 \
    --prompt-ids "$ref/prompt_ids.json" --gen-ids "$ref/gen_ids.json" -o "$out" "$@" >/dev/null 2>"$work/err"
  sed -n 's/^summary: //p' "$work/cg.out"
}
printf '%-8s %-22s %16s %16s %9s\n' tier setting before after change
for tier in $tiers; do
  for setting in "f16" "q8_0-fa"; do
    flags=()
    [ "$setting" = "q8_0-fa" ] && flags=(-ctk q8_0 -ctv q8_0 -fa on)
    b=$(count "$before" "$tier" "$work/before.f32" "${flags[@]}")
    a=$(count "$after" "$tier" "$work/after.f32" "${flags[@]}")
    same=$(cmp -s "$work/before.f32" "$work/after.f32" && echo "logits identical" || echo "LOGITS DIFFER")
    printf '%-8s %-22s %16s %16s %+8.4f%%  %s\n' "$tier" "$setting" "$b" "$a" \
      "$(python3 -c "print(($a - $b) * 100 / $b)")" "$same"
  done
done
