#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A/B of two sniper binaries on the model layer's hot paths (prefill and decode), for refactors
# that must not cost speed:
#   1. instruction counts (valgrind --tool=callgrind, deterministic whatever else runs on the
#      machine) of `sniper logits` over a short prompt (prefill: one batch) and a few single-token
#      steps (decode), resident and streamed, on the MoE / hybrid / Gemma 4 fixtures and on real
#      shapes cut to a few layers (synth presets);
#   2. wall-clock `sniper bench` runs of the real shapes, A and B alternated so that load from
#      other processes hits both alike; the median tok/s of each.
# Usage: bench/e2e/model_layer_ab.sh BIN_A BIN_B WORK_DIR
#   WORK_DIR receives the synthetic models (about 8 GB: qwen3-30b-a3b cut to 4 layers,
#   gemma4-26b-a4b to 6, qwen3.5-35b-a3b to 4); written once, reused afterwards.
# Environment: AB_ROUNDS (wall-clock rounds, default 3), AB_SKIP_CALLGRIND=1, AB_SKIP_WALL=1,
# AB_THREADS (default 2).
set -euo pipefail
a=$(realpath "$1")
b=$(realpath "$2")
work=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
shared=${SNIPER_SHARED_DIR:-$here/../shared}
threads=${AB_THREADS:-2}
rounds=${AB_ROUNDS:-3}
mkdir -p "$work"

cut_preset() {  # name preset layers
  [ -f "$work/$1.gguf" ] || "$a" synth --preset "$2" --layers "$3" -o "$work/$1.gguf" >/dev/null 2>&1
}
cut_preset q3moe-4l qwen3-30b-a3b 4
cut_preset g4moe-6l gemma4-26b-a4b 6
cut_preset q35moe-4l qwen3.5-35b-a3b 4
printf '[%s]' "$(seq -s, 1 7 224)" >"$work/prompt32.json"  # 32 ids
printf '[%s]' "$(seq -s, 3 11 90)" >"$work/gen8.json"      # 8 ids
printf '[5]' >"$work/one.json"

# Instructions of one run: callgrind's total ("Collected"), in millions (two decimals: a 1% change
# on the smallest fixture is about 0.4M).
instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ {printf "%.2f\n", $4 / 1e6}'
}

if [ "${AB_SKIP_CALLGRIND:-0}" != 1 ]; then
  echo "instruction counts (millions; callgrind, -t $threads): prefill = 32-token prompt in one batch, decode = 1 + 8 single-token steps"
  printf '%-34s %-10s %12s %12s %8s\n' model run A B "B/A"
  # The fixtures: every run. The real shapes (whose output head alone is ~300M multiply-adds a
  # row): decode only, resident, to keep each callgrind run to minutes.
  for m in "$shared/models/syn-qwen3moe-Q4_K_M.gguf" "$shared/models/syn-gemma4moe-small.gguf" \
    "$shared/models/syn-gemma4e-small.gguf" "$shared/models/syn-qwen35moe-small.gguf" \
    "$shared/models/syn-qwen3-Q4_K_M.gguf" "$work/q3moe-4l.gguf" "$work/g4moe-6l.gguf" "$work/q35moe-4l.gguf"; do
    name=$(basename "$m" .gguf)
    runs="prefill decode prefill-stream decode-stream"
    case $m in "$work"/*) runs=decode ;; esac
    for run in $runs; do
      args=(logits -t "$threads" -m "$m" -o "$work/ab.f32")
      case $run in
        prefill*) args+=(--prompt-ids "$work/prompt32.json") ;;
        decode*) args+=(--prompt-ids "$work/one.json" --gen-ids "$work/gen8.json") ;;
      esac
      case $run in *-stream) args+=(--residency stream) ;; esac
      ia=$(instructions "$a" "${args[@]}")
      ib=$(instructions "$b" "${args[@]}")
      printf '%-34s %-10s %12s %12s %8s\n' "$name" "$run" "$ia" "$ib" "$(awk -v x="$ia" -v y="$ib" 'BEGIN {printf "%.4f", y / x}')"
    done
  done
fi

if [ "${AB_SKIP_WALL:-0}" != 1 ]; then
  echo
  echo "wall clock (sniper bench -p 64 -n 32 -t $threads, A and B alternated, $rounds rounds; median tok/s)"
  printf '%-14s %-22s %10s %10s %10s %10s\n' model residency "A pp" "B pp" "A tg" "B tg"
  median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  for m in q3moe-4l g4moe-6l q35moe-4l; do
    # Streamed under a cap: the resident weights plus about half the experts.
    case $m in
      q3moe-4l) cap=1200M ;;
      g4moe-6l) cap=2400M ;;
      *) cap=1500M ;;
    esac
    for residency in resident "stream --mem $cap"; do
      : >"$work/a.pp"; : >"$work/b.pp"; : >"$work/a.tg"; : >"$work/b.tg"
      for ((r = 0; r < rounds; r++)); do
        for side in a b; do
          bin=$a
          [ $side = b ] && bin=$b
          # shellcheck disable=SC2086
          out=$("$bin" bench -m "$work/$m.gguf" -p 64 -n 32 -t "$threads" --residency $residency --json 2>/dev/null || true)
          echo "$out" | sed -n 's/.*"prefill_tok_s": *\([0-9.]*\).*/\1/p' | head -1 >>"$work/$side.pp"
          echo "$out" | sed -n 's/.*"decode_tok_s": *\([0-9.]*\).*/\1/p' | head -1 >>"$work/$side.tg"
        done
      done
      printf '%-14s %-22s %10s %10s %10s %10s\n' "$m" "$residency" "$(median <"$work/a.pp")" "$(median <"$work/b.pp")" \
        "$(median <"$work/a.tg")" "$(median <"$work/b.tg")"
    done
  done
fi
