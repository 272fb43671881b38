#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Pull throughput against a loopback hub (tests/js/lib/fake_hub.mjs), next to curl fetching the
# same bytes from the same server in the same run. Not part of CI.
# usage: bench/pull.sh SNIPER_BIN WORK_DIR SIZE_GIB   (writes a random split "model" of
#        two parts into WORK_DIR, pulls it into WORK_DIR/store, deletes everything it wrote)
set -euo pipefail
BIN=$(realpath "$1"); WORK=$(realpath -m "$2"); GIB=${3:-2}
cd "$(dirname "$0")/.."
mkdir -p "$WORK"
half=$(( GIB * 512 ))
files=("$WORK/bench-Q4_K_M-00001-of-00002.gguf" "$WORK/bench-Q4_K_M-00002-of-00002.gguf")
for f in "${files[@]}"; do head -c "${half}M" /dev/urandom > "$f"; done
node tests/js/lib/fake_hub.mjs --port 18765 --repo local/bench-GGUF "${files[@]}" > "$WORK/hub.log" 2>&1 &
HUB=$!
trap 'kill $HUB; rm -rf "$WORK/store" "${files[@]}" "$WORK/curl.out" "$WORK/hub.log"' EXIT
for _ in $(seq 1 300); do grep -q "fake hub:" "$WORK/hub.log" && break; sleep 1; done
export HF_ENDPOINT=http://127.0.0.1:18765 SNIPER_HOME=$WORK/store
for f in "${files[@]}"; do
  n=$(basename "$f")
  curl -sS -L -o "$WORK/curl.out" -w "curl:   $n %{size_download} bytes, %{speed_download} B/s\n" "$HF_ENDPOINT/local/bench-GGUF/resolve/main/$n"
done
"$BIN" pull local/bench-GGUF:Q4_K_M 2>&1 | grep -E "^downloaded|100\.0%"
