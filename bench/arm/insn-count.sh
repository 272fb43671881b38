#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Instructions executed per token, Sniper's aarch64 build against llama.cpp's, under qemu (issue
# 45's speed proxy: there is no ARM machine here and qemu timings mean nothing). Both engines run
# the same protocol on the same file with one thread: a prompt of P ids in one batch, then G ids
# fed one at a time (`sniper logits --prompt-ids --gen-ids`; scripts/arm-references'
# reference_logits for llama.cpp). A qemu TCG plugin (bench/arm/insn_count.c, built here) counts
# every guest instruction; differences between runs cancel the start-up and model load:
#   decode  = (count(P, G2) - count(P, G1)) / (G2 - G1)   per generated token
#   prefill = (count(P2, 0) - count(P1, 0)) / (P2 - P1)   per prompt token
# Usage: bench/arm/insn-count.sh MODEL.gguf [TIER...]   (tiers: SNIPER_ISA values, default: ref)
#   needs build/ci-arm64/bin/sniper, qemu-user (dynamic, for plugins) and, for the llama.cpp
#   column, scripts/arm-references.sh's build (LLAMA_ARM_BUILD, default
#   /work/big/arm/llama-arm/build-i8mm, whose -march matches -cpu max's i8mm tier).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$1
shift
tiers=${*:-ref}
sniper=$root/build/ci-arm64/bin/sniper
llama=${LLAMA_ARM_BUILD:-/work/big/arm/llama-arm/build-i8mm}
work=$(mktemp -d /var/tmp/sniper-insn.XXXXXX)
trap 'rm -rf "$work"' EXIT
gcc -O2 -shared -fPIC -o "$work/insn_count.so" "$root/bench/arm/insn_count.c"
P1=8 P2=40 G1=4 G2=20
ids() { python3 -c "import sys; n=int(sys.argv[1]); print([1] + [3 + (i * 37) % 500 for i in range(n - 1)])" "$1"; }
gids() { python3 -c "import sys; n=int(sys.argv[1]); print([3 + (i * 53) % 500 for i in range(n)])" "$1"; }
ids $P1 >"$work/p1.json"
ids $P2 >"$work/p2.json"
echo '[]' >"$work/g0.json"
gids $G1 >"$work/g1.json"
gids $G2 >"$work/g2.json"
count() {  # prints the instructions of one run: command...
  qemu-aarch64 -cpu max -plugin "$work/insn_count.so" -d plugin -D "$work/plugin.log" "$@" >/dev/null 2>&1
  sed -n 's/^insns: //p' "$work/plugin.log"
}
report() {  # name, runner (function taking prompt.json gen.json)
  local name=$1 run=$2
  local a b c d
  a=$($run "$work/p2.json" "$work/g1.json")
  b=$($run "$work/p2.json" "$work/g2.json")
  c=$($run "$work/p1.json" "$work/g0.json")
  d=$($run "$work/p2.json" "$work/g0.json")
  python3 -c 'import sys; n, a, b, c, d, g, p = sys.argv[1], *map(int, sys.argv[2:]); print("%-22s decode %12.0f insns/token   prefill %12.0f insns/token" % (n, (b - a) / g, (d - c) / p))' \
    "$name" "$a" "$b" "$c" "$d" $((G2 - G1)) $((P2 - P1))
}
run_sniper() { SNIPER_ISA=$tier count "$sniper" logits -m "$model" -t 1 --prompt-ids "$1" --gen-ids "$2" -o "$work/out.f32"; }
run_llama() { REFERENCE_THREADS=1 count "$llama/reference_logits" "$model" "$1" "$2" "$work/p.f32" "$work/g.f32"; }
echo "$(basename "$model"): P $P1 -> $P2 prompt ids, G $G1 -> $G2 generated ids, 1 thread, qemu-aarch64 -cpu max"
for tier in $tiers; do report "sniper $tier" run_sniper; done
if [ -x "$llama/reference_logits" ]; then report "llama.cpp $(basename "$llama")" run_llama; fi
