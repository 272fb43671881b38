#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Media input side by side with llama.cpp (issue 39's benchmark; not CI): one 896x896 PNG through
# the gemma4-e4b and qwen3.5-35b-a3b presets (the language models' real shapes, Q4_K_M, and their
# vision towers' real shapes, f16 projectors), and (case gemma4-e4b-audio) a 30 s 16 kHz WAV
# through gemma4-e4b with its audio tower's shapes (gemma4a, f16), 2 threads, in RAM and under an
# 8 GiB cgroup cap
# (scripts/run-capped.sh; the language model streams there). Per run it prints the image encode
# time and the time to first token, for Sniper and llama.cpp, and llama.cpp's time over Sniper's.
#   Sniper: `sniper run ... -n 1` prints "encode E ms" and "time to first token T ms (from the
#           images' bytes)": image decode + preprocess + encode + prompt evaluation + first sample.
#   llama:  scripts/mm/mtmd_ttft.cpp (built by scripts/mm/build-tools.sh) runs libmtmd, the library
#           llama-mtmd-cli runs, with llama-mtmd-cli's defaults (n_ctx 4096, flash attention auto,
#           projector warmup) and times the same span: file decode and preprocessing, the encode
#           (also printed alone), every chunk's evaluation and the first greedy token. (The CLI itself
#           prints no per-phase figure in this llama.cpp revision.) Model loading is outside both.
# Files are written once under WORK (default /work/big/mm/bench): the synthetic models (about
# 27 GB for both presets), the projectors and the image. Needs root for the capped runs.
# Environment: MODELS (default "gemma4-e4b qwen3.5-35b-a3b gemma4-e4b-audio"), MODES ("ram cap"), CAP (8G),
#   THREADS (2), REPS (2),
#   MM_LAYERS (override the projector's layer count: a quicker smoke run), SNIPER (the binary),
#   LLAMA (llama.cpp's source folder, built by ../shared/tools/build-llama-cpp.sh).
# Usage: bench/mm_bench.sh [WORK]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/work/big/mm/bench}
models=${MODELS:-gemma4-e4b qwen3.5-35b-a3b gemma4-e4b-audio}
cap=${CAP:-8G}
threads=${THREADS:-2}
reps=${REPS:-2}
sniper=${SNIPER:-}
if [ -z "$sniper" ]; then
  for b in "$root/build/release/bin/sniper" "$root/build/ci/bin/sniper"; do [ -x "$b" ] && sniper=$b && break; done
fi
llama=${LLAMA:-/work/llama.cpp/llama.cpp-d32676d77}
[ -x "$sniper" ] || { echo "mm_bench: no sniper binary (build it, or set SNIPER)" >&2; exit 2; }
tools=$("$root/scripts/mm/build-tools.sh" "$llama" "$work/tools" | tail -1)
ttft=$tools/mtmd_ttft
mkdir -p "$work"
suffix=${MM_LAYERS:+-v$MM_LAYERS}

# The image: 896x896 RGB, a gradient with a pattern (standard library only).
img=$work/img896.png
if [ ! -f "$img" ]; then
  /usr/bin/python3 - "$img" <<'EOF'
import struct, sys, zlib
w = h = 896
rows = []
for y in range(h):
    row = bytearray([0])
    for x in range(w):
        row += bytes((x * 255 // w, y * 255 // h, ((x // 32 + y // 32) % 2) * 200 + (x * y) % 56))
    rows.append(bytes(row))
chunk = lambda t, b: struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
png += chunk(b'IDAT', zlib.compress(b''.join(rows), 9)) + chunk(b'IEND', b'')
open(sys.argv[1], 'wb').write(png)
EOF
fi

# The audio: 30 s of 16 kHz mono 16-bit WAV, tones and noise (one gemma4a chunk: 750 tokens).
wav=$work/clip30.wav
if [ ! -f "$wav" ]; then
  /usr/bin/python3 - "$wav" <<'EOF'
import math, struct, sys
n, state, s = 16000 * 30, 12345, []
for i in range(n):
    state = (state * 1103515245 + 12345) % (1 << 31)
    v = 6000 * math.sin(2 * math.pi * (220 + 440 * (i // 16000 % 3)) * i / 16000) + ((state >> 16) % 2001) - 1000
    s.append(max(-32768, min(32767, int(v))))
pcm = struct.pack('<%dh' % n, *s)
open(sys.argv[1], 'wb').write(b'RIFF' + struct.pack('<I', 36 + len(pcm)) + b'WAVEfmt ' +
    struct.pack('<IHHIIHH', 16, 1, 1, 16000, 32000, 2, 16) + b'data' + struct.pack('<I', len(pcm)) + pcm)
EOF
fi

projector_of() {
  case "$1" in gemma4-e4b) echo gemma4v;; qwen3.5-35b-a3b) echo qwen3vl;; gemma4-e4b-audio) echo gemma4a;; *) echo "?";; esac
}
printf "%-18s %-6s %-7s %12s %12s\n" model mode engine encode_ms ttft_ms
for m in $models; do
  proj=$(projector_of "$m")
  base=${m%-audio}
  lm=$work/$base.gguf
  mm=$work/$m$suffix.mmproj.gguf
  media=(--image "$img")
  file=$img
  prompt="Describe the image in one sentence."
  if [ "$proj" = gemma4a ]; then
    media=(--audio "$wav")
    file=$wav
    prompt="Transcribe the audio."
  fi
  if [ ! -f "$lm" ]; then
    "$sniper" synth --preset "$base" -o "$lm" >/dev/null 2>&1
  fi
  if [ ! -f "$mm" ]; then
    "$sniper" synth --mmproj "$proj" --preset "$base" --for "$lm" ${MM_LAYERS:+--layers $MM_LAYERS} -o "$mm" >/dev/null 2>&1
  fi
  for mode in ${MODES:-ram cap}; do
    wrap=()
    [ "$mode" = cap ] && wrap=("$root/scripts/run-capped.sh" "$cap")
    for rep in $(seq 1 "$reps"); do
      # Sniper (alternated with llama in the same loop, so both see the same machine state).
      out=$("${wrap[@]}" "$sniper" run -m "$lm" --mmproj "$mm" "${media[@]}" -p "$prompt" -n 1 -t "$threads" \
              --temp 0 --no-echo 2>&1 >/dev/null) || { echo "$out" | tail -3 >&2; exit 1; }
      s_enc=$(echo "$out" | sed -n 's/.*encode \([0-9.]*\) ms.*/\1/p' | tail -1)
      s_ttft=$(echo "$out" | sed -n 's/.*time to first token \([0-9.]*\) ms.*/\1/p' | tail -1)
      # llama.cpp's libmtmd.
      out=$("${wrap[@]}" "$ttft" "$lm" "$mm" "$file" "$prompt" "$threads" 2>/dev/null) || { echo "mtmd_ttft failed" >&2; exit 1; }
      l_enc=$(echo "$out" | sed -n 's/.*encode_ms=\([0-9.]*\).*/\1/p')
      l_ttft=$(echo "$out" | sed -n 's/.*ttft_ms=\([0-9.]*\).*/\1/p')
      printf "%-18s %-6s %-7s %12s %12s\n" "$m" "$mode" sniper "$s_enc" "$s_ttft"
      printf "%-18s %-6s %-7s %12s %12s   encode x%s, ttft x%s\n" "$m" "$mode" llama "$l_enc" "$l_ttft" \
        "$(awk -v a="$l_enc" -v b="$s_enc" 'BEGIN { printf "%.2f", a / b }')" \
        "$(awk -v a="$l_ttft" -v b="$s_ttft" 'BEGIN { printf "%.2f", a / b }')"
    done
  done
done
