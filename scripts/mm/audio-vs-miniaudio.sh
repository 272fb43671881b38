#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures Sniper's audio decoding (libsndfile / libvorbisfile, mono mean, libsamplerate to 16 kHz)
# against miniaudio, which llama.cpp's mtmd vendors and decodes with (mtmd_helper), on the given
# files (default: tones of 2 s written here at 8, 16, 44.1 and 48 kHz, mono and stereo). Needs
# build/ci's libraries and /usr/bin/python3.
# Usage: scripts/mm/audio-vs-miniaudio.sh [LLAMA_SRC] [FILE...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
L=${1:-/work/llama.cpp/llama.cpp-d32676d77}
shift || true
files=("$@")
out=/tmp/sniper-audio-vs-miniaudio
mkdir -p "$out"
if [ ${#files[@]} -eq 0 ]; then
  /usr/bin/python3 - "$out" <<'PY'
import math, struct, sys
def wav(path, rate, ch, n):
    s = [int(8000 * (math.sin(2 * math.pi * 440 * i / rate) + 0.5 * math.sin(2 * math.pi * (880 + c * 300) * i / rate)))
         for i in range(n) for c in range(ch)]
    pcm = struct.pack('<%dh' % len(s), *s)
    open(path, 'wb').write(b'RIFF' + struct.pack('<I', 36 + len(pcm)) + b'WAVEfmt ' +
                           struct.pack('<IHHIIHH', 16, 1, ch, rate, rate * ch * 2, ch * 2, 16) + b'data' +
                           struct.pack('<I', len(pcm)) + pcm)
d = sys.argv[1]
for rate, ch in ((16000, 1), (16000, 2), (8000, 1), (44100, 1), (48000, 2)):
    wav('%s/tone%d_%dch.wav' % (d, rate, ch), rate, ch, 2 * rate)
PY
  files=("$out"/tone*.wav)
fi
lib=$root/build/ci/src
g++ -std=c++20 -O2 -w -I"$root/src" -I"$L/vendor" "$root/scripts/mm/audio_vs_miniaudio.cpp" -o "$out/audio_vs_miniaudio" \
  "$lib/media/libsniper_media.a" "$lib/base/libsniper_base.a" -lsndfile -lvorbisfile -lvorbis -lsamplerate \
  -ljpeg -lpng -lwebp -lgif -lcrypto -lpthread -lm -ldl
"$out/audio_vs_miniaudio" "${files[@]}"
