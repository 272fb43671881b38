#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `sniper serve` under mpirun (src/dist, issue 44), expert parallel over 3 ranks on this machine:
# two concurrent clients each get the text one process gives them alone, and the serving ranks
# did serve experts; then the faults: a serving rank SIGKILLed mid-generation fails the request in
# flight with an error naming the rank within --rank-timeout, the server stays up, /health says
# "degraded" (503) with the reason and a new request gets a 503 at once. Open MPI ends the whole
# job when a rank dies unless mpirun runs with --enable-recovery (docs/distributed.md).
# Usage: serve_parallel_test.sh SNIPER_BINARY SHARED_DIR
set -uo pipefail
bin=$1
shared=$2
tmp=$(mktemp -d /var/tmp/sniper-serve-mpi-test.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
passes=0
pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
model="$shared/models/syn-qwen3moe-Q4_K_M.gguf"
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
common=(-m "$model" --port 0 --slots 2 -t 1 --temp 0 --context-dir "$tmp/ctx")

# Waits for the server writing to $1 to listen; prints its port.
wait_port() {
  for _ in $(seq 300); do
    grep -q listening "$1" && break
    sleep 0.1
  done
  sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$1"
}
# The pid of rank $2 among mpirun $1's children.
rank_pid() {
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^OMPI_COMM_WORLD_RANK=$2\$" && echo "$p"
  done
}
complete() {  # port prompt max_tokens -> the response body
  curl -s --max-time 120 "http://127.0.0.1:$1/v1/completions" -H 'content-type: application/json' \
    -d "{\"prompt\":\"$2\",\"max_tokens\":$3,\"temperature\":0}"
}
text_of() { sed -n 's/.*"text":"\([^"]*\)".*/\1/p' "$1"; }

# One process, one client at a time.
"$bin" serve "${common[@]}" >"$tmp/solo.out" 2>"$tmp/solo.err" &
solo=$!
pids+=("$solo")
port=$(wait_port "$tmp/solo.out")
complete "$port" "Once upon a time" 24 >"$tmp/solo_a.json"
complete "$port" "The quick brown fox" 24 >"$tmp/solo_b.json"
kill -TERM "$solo"
wait "$solo"

# Three ranks, two clients at once (one batched pass holds both slots' rows).
"${mpi[@]}" -np 3 "$bin" serve "${common[@]}" >"$tmp/ep.out" 2>"$tmp/ep.err" &
job=$!
pids+=("$job")
port=$(wait_port "$tmp/ep.out")
if [ -z "$port" ]; then
  fail "serve under mpirun did not listen: $(tail -5 "$tmp/ep.err")"
else
  complete "$port" "Once upon a time" 24 >"$tmp/ep_a.json" &
  a=$!
  complete "$port" "The quick brown fox" 24 >"$tmp/ep_b.json" &
  b=$!
  wait "$a" "$b"
  for x in a b; do
    solo_text=$(text_of "$tmp/solo_$x.json")
    if [ -n "$solo_text" ] && [ "$(text_of "$tmp/ep_$x.json")" = "$solo_text" ]; then
      pass
    else
      fail "client $x: mpirun text differs from one process: $(cat "$tmp/ep_$x.json") vs $(cat "$tmp/solo_$x.json")"
    fi
  done
  # A graceful stop: SIGTERM to rank 0 stops the server and then the serving ranks, which report.
  kill -TERM "$(rank_pid "$job" 0)"
  wait "$job"
  status=$?
  [ $status -eq 0 ] && pass || fail "serve under mpirun exited with $status: $(tail -5 "$tmp/ep.err")"
  for r in 1 2; do
    if grep -Eq "^rank $r \(host .*\): served [1-9][0-9]* expert requests" "$tmp/ep.err"; then
      pass
    else
      fail "rank $r served no expert request: $(tail -5 "$tmp/ep.err")"
    fi
  done
fi

# A serving rank SIGKILLed while a streamed generation runs.
"${mpi[@]}" --enable-recovery -np 3 "$bin" serve "${common[@]}" --rank-timeout 3 >"$tmp/kill.out" 2>"$tmp/kill.err" &
job=$!
pids+=("$job")
port=$(wait_port "$tmp/kill.out")
if [ -z "$port" ]; then
  fail "serve under mpirun --enable-recovery did not listen: $(tail -5 "$tmp/kill.err")"
else
  victim=$(rank_pid "$job" 1)
  curl -sN --max-time 60 "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
    -d '{"prompt":"Once upon a time","max_tokens":480,"temperature":0,"stream":true}' >"$tmp/stream.txt" &
  client=$!
  for _ in $(seq 200); do
    [ -s "$tmp/stream.txt" ] && break
    sleep 0.02
  done
  kill -KILL "$victim"
  t0=$(date +%s)
  wait "$client"
  took=$(($(date +%s) - t0))
  if grep -q "rank 1 (host .*): no answer within the rank timeout" "$tmp/stream.txt" && [ "$took" -le 10 ]; then
    pass
  else
    fail "request in flight after SIGKILL of rank 1 (${took} s): $(tail -c 400 "$tmp/stream.txt")"
  fi
  health=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port/health")
  if echo "$health" | grep -q '"status":"degraded"' && echo "$health" | grep -q 'rank 1 (host' &&
    [ "${health##* }" = 503 ]; then
    pass
  else
    fail "health after a lost rank: $health"
  fi
  start=$(date +%s)
  again=$(curl -s -w ' %{http_code}' --max-time 30 "http://127.0.0.1:$port/v1/completions" \
    -H 'content-type: application/json' -d '{"prompt":"Hello","max_tokens":4}')
  if [ "${again##* }" = 503 ] && echo "$again" | grep -q 'rank 1 (host' && [ $(($(date +%s) - start)) -le 2 ]; then
    pass
  else
    fail "a request after a lost rank: $again"
  fi
  kill -TERM "$(rank_pid "$job" 0)"
  wait "$job"
fi

echo "serve_parallel_test: $passes passed, $fails failed"
[ "$fails" -eq 0 ]
