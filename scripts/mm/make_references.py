#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""make_references.py OUT_DIR: builds tests/media/reference with llama.cpp's libmtmd (never with
Sniper's own computation): for each case below it writes the projector (`sniper synth --mmproj`,
deterministic for its seed; the test writes the same bytes again and checks their SHA-256) and a
gradient image (make_media.py's formula at the case's size, which the test regenerates), runs
../shared/tools/mm/dump_mtmd.cpp and scripts/mm/dump_mtmd_tensors.cpp on them, and keeps the
compact results:
  case.json   the language model, the projector's synth arguments and SHA-256, the image size,
              the prompt and gen ids, mtmd's chunks, the encoder input's size and SHA-256
              (inp_raw, float32 planar), the embeddings' shape and SHA-256
  embd_head.f32  the first 1024 embedding values (for an NMSE when the bits differ)
  logits.f32     the prompt's last row and one row per gen id (teacher forced)
Preprocessing-only cases keep just the encoder input's size and hash.
Usage: scripts/mm/make_references.py OUT_DIR [--sniper BIN] [--tools DIR] [--shared DIR]
Needs /usr/bin/python3 (numpy), a built sniper and the tools of scripts/mm/build-tools.sh built
against llama.cpp without AVX512-FP16 (scripts/mm/build-llama-nofp16.sh explains why):
  scripts/mm/build-tools.sh "$(scripts/mm/build-llama-nofp16.sh)" /tmp/sniper-mm-tools-nofp16"""
import argparse, hashlib, json, os, struct, subprocess, sys, tempfile, zlib

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
a = argparse.ArgumentParser()
a.add_argument('out')
a.add_argument('--sniper', default=os.path.join(root, 'build/ci/bin/sniper'))
a.add_argument('--tools', default='/tmp/sniper-mm-tools-nofp16')
a.add_argument('--shared', default=os.path.join(root, '..', 'shared'))
o = a.parse_args()
shared = os.path.abspath(o.shared)


def gradient_png(path, w, h):
    # make_media.py's img.png formula at any size.
    raw = b''.join(b'\x00' + bytes((x * 255 // w, y * 255 // h, (x * y) % 256)[c] for x in range(w) for c in range(3))
                   for y in range(h))
    chunk = lambda t, b: struct.pack('>I', len(b)) + t + b + struct.pack('>I', zlib.crc32(t + b) & 0xffffffff)
    open(path, 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) +
                           chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def sha(path):
    return hashlib.sha256(open(path, 'rb').read()).hexdigest()


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('failed: %s\n%s%s' % (' '.join(cmd), r.stdout[-2000:], r.stderr[-2000:]))
    return r.stdout


# Cases: (name, language model, projector synth args or a shared projector, image size, prompt, gen ids).
GEN = [5, 9, 17]
cases = [
    # The shared projectors on other sizes and aspect ratios (preprocessing and encoder only).
    dict(name='pre-gemma4v-97x61', lm='syn-gemma4moe-small', mmproj='shared:syn-gemma4v-small', size=(97, 61)),
    dict(name='pre-gemma4v-1400x1000', lm='syn-gemma4moe-small', mmproj='shared:syn-gemma4v-small', size=(1400, 1000)),
    dict(name='pre-gemma4v-40x200', lm='syn-gemma4moe-small', mmproj='shared:syn-gemma4v-small', size=(40, 200)),
    dict(name='pre-qwen3vl-97x61', lm='syn-qwen35moe-small', mmproj='shared:syn-qwen3vl-small', size=(97, 61)),
    dict(name='pre-qwen3vl-300x20', lm='syn-qwen35moe-small', mmproj='shared:syn-qwen3vl-small', size=(300, 20)),
    dict(name='pre-qwen3vl-2100x2000', lm='syn-qwen35moe-small', mmproj='shared:syn-qwen3vl-small', size=(2100, 2000)),
    # Full cases: the dense qwen35 with an f16 qwen3vl projector; the Gemma 4 E-model (per-layer
    # inputs, shared KV) with a q8_0 gemma4v projector and GELU-quick.
    dict(name='qwen35-qwen3vl-f16', lm='syn-qwen35-small',
         synth=['--mmproj', 'qwen3vl', '--type', 'f16', '--seed', '11', '--layers', '2'],
         size=(130, 70), prompt='Picture: <__media__> Say what you see.', gen=GEN),
    dict(name='gemma4e-gemma4v-q8_0', lm='syn-gemma4e-small',
         synth=['--mmproj', 'gemma4v', '--type', 'q8_0', '--seed', '12', '--mmproj-act', 'gelu_quick', '--dim', '96',
                '--heads', '3', '--ff', '160'],
         size=(150, 90), prompt='Look: <__media__> What is it?', gen=GEN),
]

os.makedirs(o.out, exist_ok=True)
tmp = tempfile.mkdtemp(prefix='sniper-mm-ref-')
for c in cases:
    d = os.path.join(o.out, c['name'])
    os.makedirs(d, exist_ok=True)
    lm = os.path.join(shared, 'models', c['lm'] + '.gguf')
    if 'synth' in c:
        mm = os.path.join(tmp, c['name'] + '.mmproj.gguf')
        run([o.sniper, 'synth'] + c['synth'] + ['--for', lm, '-o', mm])
    else:
        mm = os.path.join(shared, 'models', 'mm', c['mmproj'].split(':')[1] + '.mmproj.gguf')
    img = os.path.join(tmp, c['name'] + '.png')
    gradient_png(img, *c['size'])
    dump = os.path.join(tmp, c['name'])
    os.makedirs(dump, exist_ok=True)
    run([os.path.join(o.tools, 'dump_mtmd_tensors'), lm, mm, img, dump])
    w, h = [int(v) for v in open(os.path.join(dump, 'inp_raw.txt')).read().split()]
    embd = np.fromfile(os.path.join(dump, 'embd.f32'), dtype=np.float32)
    meta = dict(lm=c['lm'], image=dict(kind='gradient', width=c['size'][0], height=c['size'][1]),
                inp_raw=dict(width=w, height=h, sha256=sha(os.path.join(dump, 'inp_raw.f32'))),
                embd=dict(n_floats=int(embd.size), sha256=sha(os.path.join(dump, 'embd.f32'))))
    if 'synth' in c:
        meta['synth'] = c['synth']
        meta['mmproj_sha256'] = sha(mm)
    else:
        meta['mmproj'] = c['mmproj'].split(':')[1]
    embd[:1024].tofile(os.path.join(d, 'embd_head.f32'))
    if 'prompt' in c:
        gen_path = os.path.join(tmp, c['name'] + '.gen.json')
        json.dump(c['gen'], open(gen_path, 'w'))
        run([os.path.join(o.tools, 'dump_mtmd'), lm, mm, img, dump, c['prompt'], gen_path])
        meta['prompt'] = c['prompt']
        meta['gen_ids'] = c['gen']
        meta['chunks'] = json.load(open(os.path.join(dump, 'chunks.json')))
        logits = np.fromfile(os.path.join(dump, 'logits.f32'), dtype=np.float32)
        logits.tofile(os.path.join(d, 'logits.f32'))
        assert sha(os.path.join(dump, 'embd.f32')) == meta['embd']['sha256']  # the two dumpers agree
    json.dump(meta, open(os.path.join(d, 'case.json'), 'w'), indent=1)
    print('%-24s inp_raw %dx%d, %d embedding floats' % (c['name'], w, h, embd.size))
