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
import argparse, hashlib, json, os, subprocess, sys, tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from audio_signals import noise, tone, wav as wav_bytes  # noqa: E402

a = argparse.ArgumentParser()
a.add_argument('out')
a.add_argument('--tool', default='/tmp/mm-audio-tools/dump_gemma4a_mel')
a.add_argument('--n-mel', type=int, default=128)
o = a.parse_args()


cases = {'tone': tone(32000), 'noise31': noise(16000 * 31 + 8123), 'boundary': noise(480161), 'short': noise(400), 'tiny': noise(100)}
ref = {'n_mel': o.n_mel, 'tool': 'scripts/mm/dump_gemma4a_mel.cpp (libmtmd mtmd_audio_preprocessor_gemma4a)',
       'cases': {}}
with tempfile.TemporaryDirectory() as d:
    for name, s in cases.items():
        wav = wav_bytes(s)
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
