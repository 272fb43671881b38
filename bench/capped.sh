#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sniper against llama.cpp on a model larger than the memory allowed: both run in a cgroup capped
# at CAP (scripts/run-capped.sh, page cache included, root needed). Sniper streams what does not
# fit (`sniper bench --residency stream --mem auto`, once per --batch value); llama.cpp maps the
# file and lets the kernel page it (`llama-bench`, its default mmap), prefill and decode timed in
# separate runs, each stopped after --timeout seconds ("> timeout" then). Prints a markdown
# table (docs/benchmarks.md, "Under a memory cap") with Sniper's SSD bytes per token and the
# cgroup's peak memory.
# usage: sudo bench/capped.sh [common options, see bench/lib.sh] [--cap 8G] [-p 1024] [-n 32]
#                             [--batch auto,64] [--timeout 1800] [MODEL]
#   MODEL default: preset:qwen3.5-35b-a3b (21.2 GB). A quick check: --cap 2G preset:qwen3-30b-a3b:layers=8
source "$(dirname "$0")/lib.sh"
bench_parse_common "$@"
CAP=8G
P=1024
N=32
BATCHES=auto
TIMEOUT=1800
models=()
set -- "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
while [ $# -gt 0 ]; do
  case "$1" in
    --cap) CAP=$2; shift 2 ;;
    -p) P=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    --batch) BATCHES=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    -*) bench_die "unknown option '$1' (see the head of $0)" ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -le 1 ] || bench_die "capped.sh takes one model"
[ ${#models[@]} -eq 1 ] || models=(preset:qwen3.5-35b-a3b)
[ "$(id -u)" -eq 0 ] || bench_die "capped.sh needs root (scripts/run-capped.sh makes a cgroup)"
bench_need node "it reads the JSON both engines print"
bench_find_sniper
bench_find_llama
capped=$BENCH_ROOT/scripts/run-capped.sh
"$capped" 64M true > /dev/null 2>&1 || bench_die "cgroups are not usable here (scripts/run-capped.sh 64M true failed)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=$(bench_model "${models[0]}")
name=$(basename "$model" .gguf)
size_gb=$(node -e "console.log((require('fs').statSync('$model').size / 1e9).toFixed(2))")

peak_of() { sed -n 's/.*cgroup peak [0-9]* bytes (\([^)]*\)).*/\1/p' "$1" | tail -1; }

IFS=, read -r -a batch_list <<< "$BATCHES"
declare -A S_PP S_TG S_BYTES S_PEAK
L_PP=() L_TG=()
for r in $(seq "$REPS"); do
  for b in "${batch_list[@]}"; do
    echo "[$name under $CAP] run $r/$REPS: sniper bench --batch $b" >&2
    "$capped" "$CAP" "$SNIPER" bench "$model" --residency stream --mem auto --batch "$b" -p "$P" -n "$N" \
      -t "$THREADS" --json > "$work/s.json" 2> "$work/s.err" || bench_die "sniper bench failed: $(tail -2 "$work/s.err")"
    S_PP[$b]+=" $(json_get "$work/s.json" j.prefill_tok_s)"
    S_TG[$b]+=" $(json_get "$work/s.json" j.decode_tok_s)"
    S_BYTES[$b]=$(json_get "$work/s.json" '(j.bytes_read_per_token / 1e9).toFixed(2)')
    S_PEAK[$b]=$(peak_of "$work/s.err")
  done
  echo "[$name under $CAP] run $r/$REPS: llama-bench prefill, then decode (each at most $TIMEOUT s)" >&2
  if "$capped" "$CAP" timeout "$TIMEOUT" "$LLAMA_BIN/llama-bench" -m "$model" -p "$P" -n 0 -t "$THREADS" -r 1 \
    -o json > "$work/lp.json" 2> "$work/lp.err"; then
    L_PP+=("$(json_get "$work/lp.json" 'j[0].avg_ts')")
  fi
  if "$capped" "$CAP" timeout "$TIMEOUT" "$LLAMA_BIN/llama-bench" -m "$model" -p 0 -n "$N" -t "$THREADS" -r 1 \
    -o json > "$work/lg.json" 2> "$work/lg.err"; then
    L_TG+=("$(json_get "$work/lg.json" 'j[0].avg_ts')")
  fi
done
or_timeout() { [ "$1" = n/a ] && echo "> $TIMEOUT s (timeout)" || echo "$1"; }
lp=$(summary "${L_PP[@]+"${L_PP[@]}"}") lg=$(summary "${L_TG[@]+"${L_TG[@]}"}")

bench_header "Under a $CAP memory cap: $name ($size_gb GB)" \
  "sudo bench/capped.sh --reps $REPS -t $THREADS --cap $CAP -p $P -n $N --batch $BATCHES --timeout $TIMEOUT ${models[0]}"
echo "| test | Sniper (stream) | llama.cpp (mmap) | Sniper / llama.cpp |"
echo "|---|---|---|---|"
for b in "${batch_list[@]}"; do
  sp=$(summary ${S_PP[$b]}) sg=$(summary ${S_TG[$b]})
  echo "| prefill $P tok/s (Sniper --batch $b) | $sp | $(or_timeout "$lp") | $(ratio "$sp" "$lp") |"
  echo "| decode $N tok/s (Sniper --batch $b) | $sg | $(or_timeout "$lg") | $(ratio "$sg" "$lg") |"
  echo "| Sniper --batch $b: SSD GB read per token, cgroup peak | ${S_BYTES[$b]} GB, ${S_PEAK[$b]:-n/a} | | |"
done
