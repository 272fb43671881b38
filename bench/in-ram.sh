#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sniper against llama.cpp with the whole model in RAM: prefill of P tokens and decode of N tokens
# on the same GGUF file, `sniper bench --residency resident` and `llama-bench` alternated --reps
# times, each with its default settings. Prints a markdown table (docs/benchmarks.md, "In RAM").
# usage: bench/in-ram.sh [common options, see bench/lib.sh] [-p P] [-n N] [MODEL...]
#   MODEL: a GGUF path or preset:NAME[:layers=N]; default preset:qwen3-8b and preset:qwen3-30b-a3b
#   (full-size synthetic files, 5.0 and 18.6 GB). Example, a quick check on a small file:
#   bench/in-ram.sh --reps 2 -p 64 -n 16 preset:qwen3-8b:layers=2
source "$(dirname "$0")/lib.sh"
bench_parse_common "$@"
P=512
N=64
models=()
set -- "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
while [ $# -gt 0 ]; do
  case "$1" in
    -p) P=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    -*) bench_die "unknown option '$1' (see the head of $0)" ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(preset:qwen3-8b preset:qwen3-30b-a3b)
bench_need node "it reads the JSON both engines print"
bench_find_sniper
bench_find_llama
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bench_header "In RAM: prefill $P and decode $N tokens" "bench/in-ram.sh --reps $REPS -t $THREADS -p $P -n $N ${models[*]}"
echo "| model | test | Sniper tok/s | llama.cpp tok/s | Sniper / llama.cpp |"
echo "|---|---|---|---|---|"
for spec in "${models[@]}"; do
  model=$(bench_model "$spec")
  s_pp=() s_tg=() l_pp=() l_tg=()
  for r in $(seq "$REPS"); do
    echo "[$spec] run $r/$REPS: sniper bench, then llama-bench" >&2
    "$SNIPER" bench "$model" --residency resident -p "$P" -n "$N" -t "$THREADS" --no-probe --json \
      > "$work/s.json" 2> "$work/s.err" || bench_die "sniper bench failed: $(tail -2 "$work/s.err")"
    s_pp+=("$(json_get "$work/s.json" j.prefill_tok_s)")
    s_tg+=("$(json_get "$work/s.json" j.decode_tok_s)")
    "$LLAMA_BIN/llama-bench" -m "$model" -p "$P" -n "$N" -t "$THREADS" -r 1 -o json \
      > "$work/l.json" 2> "$work/l.err" || bench_die "llama-bench failed: $(tail -2 "$work/l.err")"
    l_pp+=("$(json_get "$work/l.json" "j.find((e) => e.n_prompt === $P && e.n_gen === 0).avg_ts")")
    l_tg+=("$(json_get "$work/l.json" "j.find((e) => e.n_gen === $N && e.n_prompt === 0).avg_ts")")
  done
  name=$(basename "$model" .gguf)
  sp=$(summary "${s_pp[@]}") lp=$(summary "${l_pp[@]}") sg=$(summary "${s_tg[@]}") lg=$(summary "${l_tg[@]}")
  echo "| $name | prefill $P | $sp | $lp | $(ratio "$sp" "$lp") |"
  echo "| $name | decode $N | $sg | $lg | $(ratio "$sg" "$lg") |"
done
