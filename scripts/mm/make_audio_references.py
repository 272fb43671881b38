#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_audio_references.py OUT.json: the log-mel spectrograms llama.cpp's libmtmd computes for
gemma4a (scripts/mm/dump_gemma4a_mel.cpp, never Sniper's own computation) for a few WAVs whose
samples tests/media/audio_mel_test.cpp regenerates from the same formulas:
  tone      make_media.py's tone.wav (2 s, 440 Hz + 880 Hz)
  noise31   31.5 s of a sawtooth plus LCG noise (two 30-second chunks, the second short)
  boundary  30 s + 161 samples (the second chunk makes exactly one frame)
  short     400 samples (25 ms)
  tiny      100 samples (one frame, mostly padding)
For each: per chunk n_len, n_mel, the SHA-256 of the float32 [n_mel][n_len] data and its first
256 values (for a distance when the bits differ).
Usage: scripts/mm/make_audio_references.py OUT.json [--tool /tmp/mm-audio-tools/dump_gemma4a_mel]
Build the tool as the header of dump_gemma4a_mel.cpp says (g++ against the snapshot's libmtmd)."""
import argparse, hashlib, json, math, os, struct, subprocess, tempfile

import numpy as np

a = argparse.ArgumentParser()
a.add_argument('out')
a.add_argument('--tool', default='/tmp/mm-audio-tools/dump_gemma4a_mel')
a.add_argument('--n-mel', type=int, default=128)
o = a.parse_args()


def tone(n):
    return [int(8000 * (math.sin(2 * math.pi * 440 * i / 16000) + 0.5 * math.sin(2 * math.pi * 880 * i / 16000)))
            for i in range(n)]


def noise(n):
    out, state = [], 12345
    for i in range(n):
        state = (state * 1103515245 + 12345) % (1 << 31)
        v = ((i * 37) % 400 - 200) * 40 + ((state >> 16) % 8001) - 4000
        out.append(max(-32768, min(32767, v)))
    return out


cases = {'tone': tone(32000), 'noise31': noise(16000 * 31 + 8123), 'boundary': noise(480161), 'short': noise(400), 'tiny': noise(100)}
ref = {'n_mel': o.n_mel, 'tool': 'scripts/mm/dump_gemma4a_mel.cpp (libmtmd mtmd_audio_preprocessor_gemma4a)',
       'cases': {}}
with tempfile.TemporaryDirectory() as d:
    for name, s in cases.items():
        pcm = struct.pack('<%dh' % len(s), *s)
        wav = (b'RIFF' + struct.pack('<I', 36 + len(pcm)) + b'WAVEfmt ' +
               struct.pack('<IHHIIHH', 16, 1, 1, 16000, 32000, 2, 16) + b'data' + struct.pack('<I', len(pcm)) + pcm)
        path = os.path.join(d, name + '.wav')
        open(path, 'wb').write(wav)
        lines = subprocess.run([o.tool, path, str(o.n_mel), os.path.join(d, name)], check=True, capture_output=True,
                               text=True).stdout.split('\n')
        chunks = []
        for line in filter(None, lines):
            i, n_len, n_mel = map(int, line.split())
            data = open(os.path.join(d, '%s.%d.f32' % (name, i)), 'rb').read()
            head = np.frombuffer(data, dtype=np.float32)[:256]
            chunks.append({'n_len': n_len, 'n_mel': n_mel, 'sha256': hashlib.sha256(data).hexdigest(),
                           'head': [float(x) for x in head]})
        ref['cases'][name] = {'samples': len(s), 'wav_sha256': hashlib.sha256(wav).hexdigest(), 'chunks': chunks}
json.dump(ref, open(o.out, 'w'), indent=1)
print(o.out)
