#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sniper against llama.cpp at long context: decode of N tokens and prefill of P tokens with D
# tokens already in the KV cache, per KV-cache type, on the same GGUF file:
# `sniper bench --depths D --depth-kv KV --depth-prefill P -n N` against
# `llama-bench -d D -p P -n N -ctk KV -ctv KV`, alternated --reps times. A quantized cache runs
# with flash attention on both sides (llama.cpp needs it for a quantized V); f16 runs with flash
# attention on and off on both sides and each engine's better setting is shown (marked fa/nofa).
# Prints a markdown table (docs/benchmarks.md, "At depth").
# usage: bench/depth.sh [common options, see bench/lib.sh] [--depths 4096,16384] [--kv f16,q8_0,q4_0]
#                       [-p 512] [-n 16] [MODEL...]
#   MODEL default: preset:qwen3-8b:layers=2 and preset:qwen3-30b-a3b:layers=2 (few layers of the
#   real shapes, so that attention's share shows; add full files for whole-model figures).
source "$(dirname "$0")/lib.sh"
bench_parse_common "$@"
P=512
N=16
DEPTHS=4096,16384
KVS=f16,q8_0,q4_0
models=()
set -- "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
while [ $# -gt 0 ]; do
  case "$1" in
    -p) P=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    --depths) DEPTHS=$2; shift 2 ;;
    --kv) KVS=$2; shift 2 ;;
    -*) bench_die "unknown option '$1' (see the head of $0)" ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(preset:qwen3-8b:layers=2 preset:qwen3-30b-a3b:layers=2)
bench_need node "it reads the JSON both engines print"
bench_find_sniper
bench_find_llama
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# run_pair MODEL DEPTH KV FA: one Sniper run and one llama.cpp run; appends to the arrays named
# by the globals key (sniper decode, prefill; llama decode, prefill).
declare -A S_TG S_PP L_TG L_PP
run_pair() {
  local model=$1 depth=$2 kv=$3 fa=$4 key="$1|$2|$3|$4"
  local ctx=$((depth + P + N + 64))
  "$SNIPER" bench "$model" --residency resident -p 8 -n "$N" -t "$THREADS" --ctx "$ctx" --depths "$depth" \
    --depth-kv "$kv" --depth-prefill "$P" -fa "$fa" --no-probe --json > "$work/s.json" 2> "$work/s.err" ||
    bench_die "sniper bench failed: $(tail -2 "$work/s.err")"
  S_TG[$key]+=" $(json_get "$work/s.json" 'j.depth_decode[0].decode_tok_s')"
  S_PP[$key]+=" $(json_get "$work/s.json" 'j.depth_decode[0].prefill_tok_s')"
  local lfa=0
  [ "$fa" = on ] && lfa=1
  "$LLAMA_BIN/llama-bench" -m "$model" -d "$depth" -p "$P" -n "$N" -ctk "$kv" -ctv "$kv" -fa "$lfa" -t "$THREADS" \
    -r 1 -o json > "$work/l.json" 2> "$work/l.err" || bench_die "llama-bench failed: $(tail -2 "$work/l.err")"
  L_TG[$key]+=" $(json_get "$work/l.json" "j.find((e) => e.n_gen === $N).avg_ts")"
  L_PP[$key]+=" $(json_get "$work/l.json" "j.find((e) => e.n_prompt === $P).avg_ts")"
}

# best KEY_PREFIX ARRAY: "value (..) fa|nofa" of the better flash-attention setting.
best() {
  local prefix=$1 on off
  local -n arr=$2
  on=$(summary ${arr["$prefix|on"]:-})
  if [ -z "${arr["$prefix|off"]:-}" ]; then
    echo "$on"
    return
  fi
  off=$(summary ${arr["$prefix|off"]})
  if [ "$(ratio "$on" "$off")" != n/a ] && node -e "process.exit(parseFloat('$on') >= parseFloat('$off') ? 0 : 1)"; then
    echo "$on fa"
  else
    echo "$off nofa"
  fi
}

bench_header "At depth: decode $N and prefill $P tokens after D tokens of context" \
  "bench/depth.sh --reps $REPS -t $THREADS --depths $DEPTHS --kv $KVS -p $P -n $N ${models[*]}"
echo "| model | depth | KV | decode: Sniper | llama.cpp | ratio | prefill $P: Sniper | llama.cpp | ratio |"
echo "|---|---|---|---|---|---|---|---|---|"
IFS=, read -r -a depth_list <<< "$DEPTHS"
IFS=, read -r -a kv_list <<< "$KVS"
for spec in "${models[@]}"; do
  model=$(bench_model "$spec")
  name=$(basename "$model" .gguf)
  for depth in "${depth_list[@]}"; do
    for kv in "${kv_list[@]}"; do
      fas=(on)
      [ "$kv" = f16 ] && fas=(on off)
      for r in $(seq "$REPS"); do
        for fa in "${fas[@]}"; do
          echo "[$name depth $depth $kv -fa $fa] run $r/$REPS" >&2
          run_pair "$model" "$depth" "$kv" "$fa"
        done
      done
      k="$model|$depth|$kv"
      stg=$(best "$k" S_TG) ltg=$(best "$k" L_TG) spp=$(best "$k" S_PP) lpp=$(best "$k" L_PP)
      echo "| $name | $depth | $kv | $stg | $ltg | $(ratio "$stg" "$ltg") | $spp | $lpp | $(ratio "$spp" "$lpp") |"
    done
  done
done
