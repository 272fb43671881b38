#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints one line "<case> <isa> <mode> <sha256 of the logits>" for every fixture model and
# setting, so that a refactor of the model layer can prove it changed no bit anywhere:
#   scripts/logits-fingerprint.sh build/ci/bin/sniper > before.txt   (on the old commit)
#   scripts/logits-fingerprint.sh build/ci/bin/sniper > after.txt    (on the new one)
#   diff before.txt after.txt                                         (empty: bit-identical)
# Cases: every model of ../shared/models (and models/iq) fed its reference prompt and generation
# ids (sniper logits: prompt rows in one batch, then one row per generated token); the 256-token
# KV prompts of ../shared/reference/kv under their cache settings; small synthetic models the
# script writes (Gemma 4 MoE and E-model with windows shorter than the prompt, Qwen3.5 with an
# MTP block, whose draft head logits are fingerprinted too). Modes: resident (one batch), chunked
# (--batch 5: prompt chunks split across windows and layers) and streamed (--residency stream:
# experts through the expert cache, dense FFN and attention through the layer streamer). ISA
# tiers: ref, avx2, avx512 (those the host has).
# Usage: scripts/logits-fingerprint.sh SNIPER_BIN [WORK_DIR]   (WORK_DIR holds the synthetic
# models and outputs; default a temporary directory, removed afterwards).
# Environment: FP_ISAS (default "ref avx2 avx512"), FP_FILTER (a grep -E pattern on case names).
set -euo pipefail
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${SNIPER_SHARED_DIR:-$here/../shared}
work=${2:-}
if [ -z "$work" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
isas=${FP_ISAS:-ref avx2 avx512}
filter=${FP_FILTER:-.}

# Synthetic cases: (name, synth flags). Written once per work dir.
synth() {
  local name=$1; shift
  [ -f "$work/$name.gguf" ] || "$bin" synth "$@" --seed 7 -o "$work/$name.gguf" >/dev/null 2>&1
}
synth syn-g4moe --preset gemma4moe-tiny --layers 6
synth syn-g4e --preset gemma4e-tiny
synth syn-g4dense --arch gemma4 --layers 6 --window 8 --swa-period 3 --head-dim-swa 64 --kv-heads-full 1
synth syn-q35mtp --preset qwen35-tiny --nextn 1
synth syn-q35moemtp --preset qwen35moe-tiny --nextn 1
synth syn-q3next --preset qwen3next-tiny
printf '[%s]' "$(seq -s, 1 3 120)" > "$work/prompt.json"   # 40 ids
printf '[%s]' "$(seq -s, 7 5 100)" > "$work/gen.json"      # 19 ids

run() {  # case isa mode -- sniper logits arguments
  local case=$1 isa=$2 mode=$3; shift 4
  echo "$case" | grep -Eq "$filter" || return 0
  local out="$work/out.f32" sum
  rm -f "$out"
  if SNIPER_ISA=$isa "$bin" logits -t 2 "$@" -o "$out" >/dev/null 2>"$work/err.txt"; then
    sum=$(sha256sum "$out" | cut -c1-16)
  else
    sum="FAILED:$(tail -1 "$work/err.txt" | tr ' ' '_' | cut -c1-80)"
  fi
  echo "$case $isa $mode $sum"
}

modes() {  # case isa -- logits arguments
  local case=$1 isa=$2; shift 3
  run "$case" "$isa" resident -- "$@"
  run "$case" "$isa" chunked -- --batch 5 "$@"
  run "$case" "$isa" stream -- --residency stream "$@"
}

for isa in $isas; do
  for m in "$shared"/models/*.gguf "$shared"/models/iq/*.gguf; do
    name=${m#"$shared"/models/}
    name=${name%.gguf}
    ref="$shared/reference/$name"
    [ -f "$ref/prompt_ids.json" ] || continue
    modes "$name" "$isa" -- -m "$m" --prompt-ids "$ref/prompt_ids.json" --gen-ids "$ref/gen_ids.json"
  done
  for dir in "$shared"/reference/kv/*/*/; do
    setting=$(basename "$dir")
    model=$(basename "$(dirname "$dir")")
    kv=()
    case $setting in
      f16-fa0) kv=(-fa off) ;;
      f16-fa1) kv=(-fa on) ;;
      q8_0k-f16v-fa0) kv=(-ctk q8_0 -ctv f16 -fa off) ;;
      *-norot) t=${setting%%-*}; kv=(--kv-type "$t" -fa on --no-kv-rotation) ;;
      *) t=${setting%%-*}; kv=(--kv-type "$t" -fa on) ;;
    esac
    run "kv/$model/$setting" "$isa" resident -- -m "$shared/models/$model.gguf" --prompt-ids "$dir/prompt_ids.json" \
      --gen-ids "$dir/gen_ids.json" "${kv[@]}"
  done
  for s in syn-g4moe syn-g4e syn-g4dense syn-q35mtp syn-q35moemtp syn-q3next; do
    modes "$s" "$isa" -- -m "$work/$s.gguf" --prompt-ids "$work/prompt.json" --gen-ids "$work/gen.json"
  done
  for s in syn-g4moe syn-g4e; do  # the window kernel over quantized and bf16 caches
    for kv in "--kv-type q8_0 -fa on" "--kv-type q4_0 -fa on" "-ctk bf16 -ctv bf16 -fa off" "-ctk q4_0 -fa off"; do
      # shellcheck disable=SC2086
      run "$s[$kv]" "$isa" resident -- -m "$work/$s.gguf" --prompt-ids "$work/prompt.json" --gen-ids "$work/gen.json" $kv
      # shellcheck disable=SC2086
      run "$s[$kv]" "$isa" chunked -- --batch 5 -m "$work/$s.gguf" --prompt-ids "$work/prompt.json" \
        --gen-ids "$work/gen.json" $kv
    done
  done
  for s in syn-q35mtp syn-q35moemtp; do
    run "$s[mtp]" "$isa" resident -- -m "$work/$s.gguf" --prompt-ids "$work/prompt.json" --mtp
    run "$s[mtp]" "$isa" stream -- --residency stream -m "$work/$s.gguf" --prompt-ids "$work/prompt.json" --mtp
  done
done
