#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures Sniper's JPEG decoding against the stb_image that llama.cpp's mtmd vendors, on the given
# files (default: the snapshot's tools/mtmd/test-1.jpeg). Needs build/ci's libraries.
# Usage: scripts/mm/jpeg-vs-stb.sh [LLAMA_SRC] [FILE.jpg...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
L=${1:-/work/llama.cpp/llama.cpp-d32676d77}
shift || true
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$L/tools/mtmd/test-1.jpeg")
lib=$root/build/ci/src
out=/tmp/sniper-jpeg-vs-stb
g++ -std=c++20 -O2 -I"$root/src" -I"$L/vendor/stb" "$root/scripts/mm/jpeg_vs_stb.cpp" -o "$out" \
  "$lib/media/libsniper_media.a" "$lib/base/libsniper_base.a" -ljpeg -lpng -lwebp -lgif -lcrypto -lpthread
"$out" "${files[@]}"
