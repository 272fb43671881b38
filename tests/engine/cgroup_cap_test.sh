#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Out-of-core under a real memory cap: a synthetic MoE model about twice the size of a cgroup
# cap (page cache included) must generate to completion inside the cap, with the same text as
# an uncapped resident run. Skips (exit 77) where cgroups cannot be used (not root).
# Usage: cgroup_cap_test.sh SNIPER_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root for cgroups"; exit 77; fi
tmp=$(mktemp -d /var/tmp/sniper-cgroup-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
model=$tmp/moe.gguf
"$bin" synth --arch qwen3moe --dim 1024 --layers 8 --heads 16 --kv-heads 4 --head-dim 64 --experts 64 \
  --experts-active 8 --expert-ff 512 --vocab 4096 --type q4_k_m --fast --seed 3 -o "$model" >/dev/null
size=$(stat -c %s "$model")
cap=$(( size / 2 ))
echo "model $size bytes, cap $cap bytes"
"$bin" run -m "$model" -p "Once upon a time" -n 24 --temp 0 --residency resident --mem 8G >"$tmp/resident.txt" 2>"$tmp/resident.err"
set +e
"$src/scripts/run-capped.sh" "$cap" "$bin" run -m "$model" -p "Once upon a time" -n 24 --temp 0 --mem auto \
  >"$tmp/capped.txt" 2>"$tmp/capped.err"
status=$?
set -e
cat "$tmp/capped.err"
if [ $status -eq 3 ]; then echo "SKIP: no usable cgroup memory controller"; exit 77; fi
[ $status -eq 0 ] || { echo "FAIL: capped run exited $status"; exit 1; }
peak=$(sed -n 's/.*cgroup peak \([0-9]*\) bytes.*/\1/p' "$tmp/capped.err")
[ -n "$peak" ] || { echo "FAIL: no peak reported"; exit 1; }
[ "$peak" -lt "$cap" ] || { echo "FAIL: peak $peak >= cap $cap"; exit 1; }
cmp "$tmp/resident.txt" "$tmp/capped.txt" || { echo "FAIL: capped text differs from the resident run"; diff "$tmp/resident.txt" "$tmp/capped.txt"; exit 1; }
echo "PASS: peak $peak < cap $cap, same text as resident"
