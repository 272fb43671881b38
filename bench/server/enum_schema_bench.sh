#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 40 finding 7: a response_format json_schema whose enum has N entries sharing a prefix.
# Starts `sniper serve` on a small synthetic Qwen3 model with the real Qwen2 vocabulary (151,936
# tokens) and times one chat request per N (greedy, 24 tokens) with curl, and a small chat request
# (4 tokens, the other slot) sent half a second into it: does it stall other requests? Prints one
# line per N:
#   entries  body_bytes  status  request_s  other_request_s
# Usage: bench/server/enum_schema_bench.sh SNIPER_BIN [N ...]   (default N: 1000 10000 40000)
# Big files go to ${SNIPER_BENCH_DIR:-/work/big/sec-server}.
set -euo pipefail
bin=$(realpath "$1"); shift
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(1000 10000 40000)
root="$(cd "$(dirname "$0")/../.." && pwd)"
shared="${SNIPER_SHARED_DIR:-$root/../shared}"
dir="${SNIPER_BENCH_DIR:-/work/big/sec-server}"
mkdir -p "$dir"
model="$dir/enum_bench_qwen3.gguf"
[ -f "$model" ] || "$bin" synth --arch qwen3 --dim 64 --layers 2 --heads 2 --kv-heads 1 --head-dim 32 --ff 128 \
  --type q8_0 --vocab-from "$shared/tokenizer/ggml-vocab-qwen2.gguf" \
  --chat-template "$shared/tokenizer/qwen3/tokenizer_config.json" -o "$model" >/dev/null
log="$dir/enum_bench_serve.log"
"$bin" serve -m "$model" --port 0 --max-body 64M --ctx 512 --slots 2 >"$dir/enum_bench_serve.out" 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q listening "$dir/enum_bench_serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(sed -n 's/.*listening on \(http[^ ]*\)/\1/p' "$dir/enum_bench_serve.out")
printf '%8s %11s %6s %10s %15s\n' entries body_bytes status request_s other_request_s
for n in "${sizes[@]}"; do
  body="$dir/enum_bench_$n.json"
  python3 - "$n" >"$body" <<'PY'
import json, sys
n = int(sys.argv[1])
schema = {"type": "string", "enum": ["shared_common_prefix_value_%06d" % i for i in range(n)]}
print(json.dumps({"messages": [{"role": "user", "content": "pick one"}], "max_tokens": 24, "temperature": 0,
                  "response_format": {"type": "json_schema", "json_schema": {"name": "e", "schema": schema}}}))
PY
  curl -s -o "$dir/enum_bench_reply.json" -w '%{http_code} %{time_total}' -H 'Content-Type: application/json' \
    --data-binary @"$body" --max-time 900 "${url}v1/chat/completions" >"$dir/enum_bench_status" &
  cpid=$!
  sleep 0.3
  other=$(curl -s -o /dev/null -w '%{time_total}' --max-time 900 -H 'Content-Type: application/json' \
    -d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"temperature":0}' "${url}v1/chat/completions")
  wait $cpid || true
  read -r status total <"$dir/enum_bench_status" || true
  printf '%8d %11d %6s %10.2f %15.2f\n' "$n" "$(stat -c %s "$body")" "$status" "$total" "$other"
  [ "$status" = 200 ] || echo "    $(head -c 300 "$dir/enum_bench_reply.json")"
  rm -f "$body"
done
