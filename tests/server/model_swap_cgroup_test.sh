#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Several models behind one server under a real memory cap (issue 25 point 3): two synthetic
# models, each about 45% of a cgroup cap (page cache included), served by one `sniper serve
# --max-loaded 1 --mem BUDGET` (2.1 models: one plans all-resident) in a cgroup capped at 2.2.
# Alternating requests swap them many times; every request must succeed, the kernel must never OOM-kill, and the cgroup's peak must
# stay under the budget and under two models' weights: two models resident at once, or an
# unload that kept its memory, would not. Skips (exit 77) where cgroups cannot be used (not root).
# Usage: model_swap_cgroup_test.sh SNIPER_BINARY SOURCE_DIR [SWAPS]
set -euo pipefail
bin=$1
src=$2
swaps=${3:-12}
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root for cgroups"; exit 77; fi
command -v curl >/dev/null || { echo "SKIP: needs curl"; exit 77; }
tmp=$(mktemp -d /var/tmp/sniper-swap-test.XXXXXX)
server_pid=  # run-capped.sh
sniper_pid=  # the server inside its cgroup
cg=
cleanup() {
  set +e
  [ -z "$sniper_pid" ] && [ -n "$cg" ] && sniper_pid=$(head -1 "$cg/cgroup.procs" 2>/dev/null)
  [ -n "$sniper_pid" ] && kill "$sniper_pid" 2>/dev/null
  [ -n "$server_pid" ] && { [ -n "$sniper_pid" ] || kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/models"
for seed in 1 2; do
  "$bin" synth --arch llama --dim 1024 --layers 8 --heads 16 --kv-heads 4 --head-dim 64 --ff 2816 --vocab 4096 \
    --type q4_k_m --fast --seed $seed -o "$tmp/models/m$seed.gguf" >/dev/null
done
size=$(stat -c %s "$tmp/models/m1.gguf")
cap=$(( size * 22 / 10 ))
budget=$(( size * 21 / 10 ))  # enough to plan one model all-resident (the plan reserves runtime overhead)
echo "models $size bytes each, budget $budget bytes, cap $cap bytes"
fifo=$tmp/out
mkfifo "$fifo"
"$src/scripts/run-capped.sh" "$cap" "$bin" serve --models "$tmp/models" --port 0 --mem "$budget" --ctx 256 --max-loaded 1 \
  --keep-alive -1 >"$fifo" 2>"$tmp/serve.err" &
server_pid=$!
port=
if read -r -t 60 line <"$fifo"; then port=$(echo "$line" | sed -n 's|.*http://127.0.0.1:\([0-9]*\)/.*|\1|p'); fi
if [ -z "$port" ]; then
  wait "$server_pid" || status=$?
  server_pid=
  cat "$tmp/serve.err"
  if [ "${status:-0}" -eq 3 ]; then echo "SKIP: no usable cgroup memory controller"; exit 77; fi
  echo "FAIL: the server did not start"; exit 1
fi
for d in /sys/fs/cgroup/sniper-capped-"$server_pid" /sys/fs/cgroup/memory/sniper-capped-"$server_pid"; do
  if [ -d "$d" ]; then cg=$d; fi
done
[ -n "$cg" ] || { echo "FAIL: no cgroup sniper-capped-$server_pid"; exit 1; }
sniper_pid=$(head -1 "$cg/cgroup.procs")
for i in $(seq 0 "$swaps"); do
  model=m$(( i % 2 + 1 ))
  code=$(curl -s -o "$tmp/resp.json" -w '%{http_code}' -H 'Content-Type: application/json' \
    -d "{\"model\":\"$model\",\"prompt\":\"Once upon a time\",\"max_tokens\":4,\"temperature\":0}" \
    "http://127.0.0.1:$port/v1/completions")
  [ "$code" = 200 ] || { cat "$tmp/resp.json" "$tmp/serve.err"; echo "FAIL: request $i to $model answered $code"; exit 1; }
done
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
swapped=$(echo "$metrics" | sed -n 's/^sniper_model_swaps_total \([0-9]*\)$/\1/p')
loaded=$(echo "$metrics" | sed -n 's/^sniper_models_loaded \([0-9]*\)$/\1/p')
oom=0
[ -f "$cg/memory.events" ] && oom=$(sed -n 's/^oom_kill \([0-9]*\)$/\1/p' "$cg/memory.events")
kill -TERM "$sniper_pid"
sniper_pid=
wait "$server_pid" || { cat "$tmp/serve.err"; echo "FAIL: the server exited with an error"; exit 1; }
server_pid=
grep -E "loaded model|unloaded model" "$tmp/serve.err" | tail -4
peak=$(sed -n 's/.*cgroup peak \([0-9]*\) bytes.*/\1/p' "$tmp/serve.err")
[ -n "$peak" ] || { echo "FAIL: no peak reported"; exit 1; }
[ "$swapped" = "$swaps" ] || { echo "FAIL: $swapped swaps counted, expected $swaps"; exit 1; }
[ "$loaded" = 1 ] || { echo "FAIL: $loaded models loaded at the end, expected 1"; exit 1; }
[ "${oom:-0}" = 0 ] || { echo "FAIL: $oom OOM kills in the cgroup"; exit 1; }
[ "$peak" -lt "$cap" ] || { echo "FAIL: peak $peak >= cap $cap"; exit 1; }
[ "$peak" -lt "$budget" ] || { echo "FAIL: peak $peak >= budget $budget"; exit 1; }
[ "$peak" -lt $(( 2 * size )) ] || { echo "FAIL: peak $peak >= two models' weights $(( 2 * size )): an unload kept its memory"; exit 1; }
echo "PASS: $swapped swaps, cgroup peak $peak < budget $budget < cap $cap; two models' weights alone are $(( 2 * size ))"
