#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 42: N concurrent streaming clients against `sniper serve --slots N` and `llama-server -np
# N` on the same GGUF, in one sitting, alternated (bench/server/stream_clients.mjs drives them:
# greedy /v1/completions, ignore_eos). Per engine and client count: aggregate decode tok/s, time
# to first token and inter-token latency (p50/p99). With --long N (default 2048) one more case:
# 3 clients stream and a prompt of about N tokens arrives (its TTFT, and the streaming clients'
# largest gap while it is evaluated: a stall shows there). Prints a markdown table
# (docs/serving.md).
# usage: bench/server/concurrency.sh [common options, see bench/lib.sh] [--clients 1,2,4,8]
#          [-n 64] [--long 2048] [--ctx 4096] [--mem M] MODEL...
#   MODEL default: preset:qwen3-8b preset:qwen3-30b-a3b. A quick check: -t 2 --reps 1 --clients 1,2
#   -n 16 --long 256 preset:qwen3-8b:layers=2
#   --mem M: sniper serve --mem M (an 8 GiB cap: --mem 8G; llama-server maps the file as usual)
#   --spec "ARGS": sniper serve decodes speculatively with ARGS (e.g. "--spec-type ngram
#     --draft-max 8"); --llama-spec "ARGS" the same for llama-server (e.g. "--spec-type
#     ngram-simple --draft-max 8"; default: none)
#   --vs BIN: instead of llama-server, another sniper binary (an A/B of two builds, e.g. the spec
#     slots verifying alone before issue 42's shared verification pass, against this build)
source "$(dirname "$0")/../lib.sh"
COMMAND="$0 $*"
bench_parse_common "$@"
CLIENTS=1,2,4,8
N=64
LONG=2048
CTX=4096
MEM=""
SPEC=""
LLAMA_SPEC=""
VS=""
models=()
set -- "${BENCH_ARGS[@]+"${BENCH_ARGS[@]}"}"
while [ $# -gt 0 ]; do
  case "$1" in
    --clients) CLIENTS=$2; shift 2 ;;
    -n) N=$2; shift 2 ;;
    --long) LONG=$2; shift 2 ;;
    --ctx) CTX=$2; shift 2 ;;
    --mem) MEM=$2; shift 2 ;;
    --spec) SPEC=$2; shift 2 ;;
    --llama-spec) LLAMA_SPEC=$2; shift 2 ;;
    --vs) VS=$2; shift 2 ;;
    -*) bench_die "unknown option '$1' (see the head of $0)" ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#models[@]} -gt 0 ] || models=(preset:qwen3-8b preset:qwen3-30b-a3b)
bench_need node "the client driver"
bench_need curl "the readiness check"
bench_find_sniper
if [ -n "$VS" ]; then
  [ -x "$VS" ] || bench_die "--vs $VS is not an executable"
  other=vs
else
  bench_find_llama
  [ -x "$LLAMA_BIN/llama-server" ] || bench_die "no llama-server in $LLAMA_BIN"
  other=llama
fi
driver=$(dirname "$0")/stream_clients.mjs
work=$(mktemp -d)
pid=""
stop_server() {
  if [ -n "$pid" ]; then
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    pid=""
  fi
}
trap 'stop_server; rm -rf "$work"' EXIT
port=$((18000 + $$ % 1000))

# start ENGINE MODEL SLOTS: starts a server and waits until /health answers 200.
start() {
  local engine=$1 model=$2 slots=$3
  port=$((port + 1))
  if [ "$engine" = sniper ] || [ "$engine" = vs ]; then
    local bin=$SNIPER
    [ "$engine" = vs ] && bin=$VS
    # shellcheck disable=SC2086
    "$bin" serve -m "$model" --host 127.0.0.1 --port "$port" --slots "$slots" --ctx "$CTX" -t "$THREADS" \
      ${MEM:+--mem "$MEM"} $SPEC > "$work/server.log" 2>&1 &
  else
    # shellcheck disable=SC2086
    "$LLAMA_BIN/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -np "$slots" -c $((CTX * slots)) \
      -t "$THREADS" $LLAMA_SPEC > "$work/server.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 1 1200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 200 ] && return 0
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.5
  done
  cat "$work/server.log" >&2
  bench_die "$engine did not start on $model"
}

# run ENGINE MODEL SLOTS CLIENTS [--long N]: one measurement, its JSON line in $work/out.
run() {
  local engine=$1 model=$2 slots=$3 clients=$4
  shift 4
  start "$engine" "$model" "$slots"
  node "$driver" "http://127.0.0.1:$port" --clients "$clients" --tokens "$N" "$@" > "$work/out" ||
    bench_die "$engine: the driver failed"
  experts=""
  if [ "$engine" != llama ]; then
    # Distinct routed experts read per MoE layer and pass, against the sum over the sequences of
    # each pass (what the slots would read apart); empty for a dense model.
    local m read per
    m=$(curl -s "http://127.0.0.1:$port/metrics")
    read=$(awk '$1 == "sniper_moe_experts_read_total" {print $2}' <<< "$m")
    per=$(awk '$1 == "sniper_moe_experts_per_sequence_total" {print $2}' <<< "$m")
    [ -n "$read" ] && [ -n "$per" ] && [ "$per" != 0 ] && experts="$read / $per"
  fi
  stop_server
}

bench_header "Concurrent streaming clients (issue 42)" "$COMMAND"
[ -n "$VS" ] && echo "vs: $VS; sniper: $SNIPER"
[ -n "$SPEC$LLAMA_SPEC" ] && echo "speculative: sniper '${SPEC}', llama-server '${LLAMA_SPEC}'"
echo "| model | clients | engine | agg tok/s | TTFT p50 / p99 ms | inter-token p50 / p99 ms | experts read / sum over slots |"
echo "|---|---|---|---|---|---|---|"
for spec in "${models[@]}"; do
  model=$(bench_model "$spec")
  IFS=, read -r -a counts <<< "$CLIENTS"
  for c in "${counts[@]}"; do
    declare -A agg=() ttft=() itl=() exp=()
    for rep in $(seq 1 "$REPS"); do
      for engine in sniper $other; do
        run "$engine" "$model" "$c" "$c"
        agg[$engine]+="$(json_get "$work/out" j.agg_tok_s) "
        ttft[$engine]+="$(json_get "$work/out" 'j.ttft_ms.p50 + " / " + j.ttft_ms.p99')|"
        itl[$engine]+="$(json_get "$work/out" 'j.itl_ms.p50 + " / " + j.itl_ms.p99')|"
        exp[$engine]+="${experts}|"
      done
    done
    for engine in sniper $other; do
      # shellcheck disable=SC2086
      echo "| $(basename "$model") | $c | $engine | $(summary ${agg[$engine]}) | ${ttft[$engine]%|} | ${itl[$engine]%|} | ${exp[$engine]%|} |"
    done
    unset agg ttft itl exp
  done
  if [ "$LONG" -gt 0 ]; then
    for engine in sniper $other; do
      for rep in $(seq 1 "$REPS"); do
        run "$engine" "$model" 4 3 --long "$LONG"
        echo "| $(basename "$model") | 3 + a ${LONG}-word prompt | $engine | $(json_get "$work/out" j.agg_tok_s) |" \
          "long TTFT $(json_get "$work/out" j.long.ttft_ms) | others' largest gap $(json_get "$work/out" j.long.others_max_gap_ms)," \
          "p50 $(json_get "$work/out" j.long.others_p50_gap_ms) | ${experts} |"
      done
    done
  fi
done
