#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_gemma4a_references.py OUT_DIR: the gemma4a audio cases of tests/media/reference, made with
llama.cpp's libmtmd (never with Sniper's own computation): for each case below it writes the
projector (`sniper synth --mmproj gemma4a`, deterministic for its seed: the test writes it again
and checks its SHA-256) and a 16 kHz mono 16-bit WAV whose samples tests/media/audio_reference_test.cpp
regenerates from the same formula (make_audio_references.py's noise and tone), runs
../shared/tools/mm/dump_mtmd.cpp on them with the case's prompt, and keeps:
  case.json  the language model, the synth arguments and the projector's SHA-256, the audio
             (formula, samples, the WAV's SHA-256), the prompt and gen ids, mtmd's chunks, the
             embeddings' shape and SHA-256
  embd.f32   the audio chunk's embeddings (all of them: a few tokens of a tiny tower)
  logits.f32 the prompt's last row and one row per gen id (teacher forced)
Usage: scripts/mm/make_gemma4a_references.py OUT_DIR [--sniper BIN] [--tools DIR] [--shared DIR]
The tools: scripts/mm/build-tools.sh "$(scripts/mm/build-llama-nofp16.sh)" /tmp/sniper-mm-tools-nofp16"""
import argparse, hashlib, json, math, os, struct, subprocess, sys, tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from audio_signals import noise, tone, wav  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
a = argparse.ArgumentParser()
a.add_argument('out')
a.add_argument('--sniper', default=os.path.join(root, 'build/ci/bin/sniper'))
a.add_argument('--tools', default='/tmp/sniper-mm-tools-nofp16')
a.add_argument('--shared', default=os.path.join(root, '..', 'shared'))
o = a.parse_args()
shared = os.path.abspath(o.shared)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('failed: %s\n%s%s' % (' '.join(cmd), r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout


GEN = [5, 9, 17]
cases = [
    # f32 tower (conv biases, attention out bias, every optional norm), 3 s of noise: 76 tokens.
    dict(name='gemma4e-gemma4a-f32', lm='syn-gemma4e-small', synth=['--mmproj', 'gemma4a', '--seed', '21'],
         audio=('noise', 16000 * 3 + 500), prompt='Listen: <__media__> What is it?', gen=GEN),
    # q8_0 matrices (activations quantized as ggml does), 2 s of make_media.py's tone.
    dict(name='gemma4e-gemma4a-q8_0', lm='syn-gemma4e-small',
         synth=['--mmproj', 'gemma4a', '--type', 'q8_0', '--seed', '22', '--layers', '3'],
         audio=('tone', 32000), prompt='<__media__> Transcribe.', gen=GEN),
]

os.makedirs(o.out, exist_ok=True)
tmp = tempfile.mkdtemp(prefix='sniper-gemma4a-ref-')
for c in cases:
    d = os.path.join(o.out, c['name'])
    os.makedirs(d, exist_ok=True)
    lm = os.path.join(shared, 'models', c['lm'] + '.gguf')
    mm = os.path.join(tmp, c['name'] + '.mmproj.gguf')
    run([o.sniper, 'synth'] + c['synth'] + ['--for', lm, '-o', mm])
    kind, n = c['audio']
    data = wav(tone(n) if kind == 'tone' else noise(n))
    audio = os.path.join(tmp, c['name'] + '.wav')
    open(audio, 'wb').write(data)
    dump = os.path.join(tmp, c['name'])
    os.makedirs(dump, exist_ok=True)
    gen_path = os.path.join(tmp, c['name'] + '.gen.json')
    json.dump(c['gen'], open(gen_path, 'w'))
    run([os.path.join(o.tools, 'dump_mtmd'), lm, mm, audio, dump, c['prompt'], gen_path])
    embd = np.fromfile(os.path.join(dump, 'embd.f32'), dtype=np.float32)
    meta = dict(lm=c['lm'], synth=c['synth'], mmproj_sha256=sha(open(mm, 'rb').read()),
                audio=dict(kind=kind, samples=n, wav_sha256=sha(data)), prompt=c['prompt'], gen_ids=c['gen'],
                chunks=json.load(open(os.path.join(dump, 'chunks.json'))),
                embd=dict(n_floats=int(embd.size), sha256=sha(embd.tobytes())))
    embd.tofile(os.path.join(d, 'embd.f32'))
    np.fromfile(os.path.join(dump, 'logits.f32'), dtype=np.float32).tofile(os.path.join(d, 'logits.f32'))
    json.dump(meta, open(os.path.join(d, 'case.json'), 'w'), indent=1)
    print('%-24s %d samples, %d embedding floats' % (c['name'], n, embd.size))
