#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Lists a GGUF file's tensors as JSON: [{"name", "type" (ggml type id), "sha256" of its data}],
# in file order. tests/golden/gemma4_quantized_test.cpp re-quantizes the shared F32 fixtures to
# these types and checks every tensor against these digests (i.e. against llama-quantize's output).
# Usage: scripts/gguf-tensor-digests.py FILE.gguf > tensors.json
import hashlib
import json
import struct
import sys

# ggml type id -> (elements per block, bytes per block), for the types llama-quantize's Q4_K_M mix writes.
BLOCKS = {0: (1, 4), 1: (1, 2), 6: (32, 22), 8: (32, 34), 12: (256, 144), 13: (256, 176), 14: (256, 210)}
SCALARS = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}


def main(path):
    data = open(path, 'rb').read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from('<' + fmt, data, pos)
        pos += struct.calcsize('<' + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take('Q')
        s = data[pos:pos + n].decode()
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take('I'), take('Q')
            return [value(et) for _ in range(n)]
        return take(SCALARS[t])

    if data[:4] != b'GGUF':
        sys.exit(f'{path}: not a GGUF file')
    pos = 4
    take('I')
    n_tensors, n_kv = take('Q'), take('Q')
    alignment = 32
    for _ in range(n_kv):
        key = string()
        v = value(take('I'))
        if key == 'general.alignment':
            alignment = v
    infos = []
    for _ in range(n_tensors):
        name = string()
        ne = [take('Q') for _ in range(take('I'))]
        t, off = take('I'), take('Q')
        infos.append((name, ne, t, off))
    base = (pos + alignment - 1) // alignment * alignment
    out = []
    for name, ne, t, off in infos:
        if t not in BLOCKS:
            sys.exit(f'{path}: tensor {name} has type {t}, which this script does not size')
        n = 1
        for x in ne:
            n *= x
        per, size = BLOCKS[t]
        nbytes = n // per * size
        blob = data[base + off:base + off + nbytes]
        out.append({'name': name, 'type': t, 'sha256': hashlib.sha256(blob).hexdigest()})
    sys.stdout.write('[\n' + ',\n'.join(json.dumps(o) for o in out) + '\n]\n')


if __name__ == '__main__':
    main(sys.argv[1])
