#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An image under a real memory cap: a synthetic Qwen3.5-MoE language model and a qwen3vl_merger
# projector whose weights alone are larger than the cgroup cap (page cache included), about half
# of what the two take together. `sniper run --mem auto` under the cap must plan the projector's
# share first (its ViT layers stream), encode the image and answer with the same text as an
# uncapped resident run, with the cgroup's peak under the cap. Skips (exit 77) where cgroups
# cannot be used (not root).
# Usage: media_cap_test.sh SNIPER_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root for cgroups"; exit 77; fi
tmp=$(mktemp -d /var/tmp/sniper-media-cap-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
lm=$tmp/lm.gguf
mm=$tmp/mm.gguf
"$bin" synth --arch qwen35moe --dim 1024 --layers 4 --experts 64 --experts-active 8 --expert-ff 512 --vocab 4096 \
  --type q4_k_m --fast --seed 3 -o "$lm" >/dev/null 2>&1
"$bin" synth --mmproj qwen3vl --for "$lm" --dim 1024 --layers 8 --heads 16 --ff 4096 --type f32 --seed 4 \
  -o "$mm" >/dev/null 2>&1
# A 64x128 RGB PNG (8 image tokens), standard library only.
/usr/bin/env python3 - "$tmp/img.png" <<'EOF'
import struct, sys, zlib
w, h = 64, 128
raw = b''.join(b'\0' + bytes(v for x in range(w) for v in (x * 4, y * 2, (x ^ y) & 255)) for y in range(h))
chunk = lambda t, b: struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
                              chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
EOF
lm_size=$(stat -c %s "$lm")
mm_size=$(stat -c %s "$mm")
cap=$(( (lm_size + mm_size) / 2 ))
echo "language model $lm_size bytes, projector $mm_size bytes, cap $cap bytes"
[ "$mm_size" -gt "$cap" ] || { echo "FAIL: the projector should be larger than the cap"; exit 1; }
args=(run -m "$lm" --mmproj "$mm" --image "$tmp/img.png" --image-max-tokens 16 -p "What is in the image?" -n 12 --temp 0)
"$bin" "${args[@]}" --residency resident --mem 8G >"$tmp/resident.txt" 2>"$tmp/resident.err" ||
  { cat "$tmp/resident.err"; echo "FAIL: resident run"; exit 1; }
set +e
"$src/scripts/run-capped.sh" "$cap" "$bin" "${args[@]}" --mem auto >"$tmp/capped.txt" 2>"$tmp/capped.err"
status=$?
set -e
cat "$tmp/capped.err"
if [ $status -eq 3 ]; then echo "SKIP: no usable cgroup memory controller"; exit 77; fi
[ $status -eq 0 ] || { echo "FAIL: capped run exited $status"; exit 1; }
grep -q "projector layers streamed" "$tmp/capped.err" || { echo "FAIL: the projector's layers did not stream"; exit 1; }
peak=$(sed -n 's/.*cgroup peak \([0-9]*\) bytes.*/\1/p' "$tmp/capped.err")
[ -n "$peak" ] || { echo "FAIL: no peak reported"; exit 1; }
[ "$peak" -lt "$cap" ] || { echo "FAIL: peak $peak >= cap $cap"; exit 1; }
cmp "$tmp/resident.txt" "$tmp/capped.txt" ||
  { echo "FAIL: capped text differs from the resident run"; diff "$tmp/resident.txt" "$tmp/capped.txt"; exit 1; }
echo "PASS: peak $peak < cap $cap, projector layers streamed, same text as resident"
