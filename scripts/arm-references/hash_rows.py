#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the JSON of one tier's ARM references (scripts/arm-references.sh) to stdout: for every
# case dumped under OUT (<case>.prompt.f32, <case>.gen.f32, n_vocab float32 per row), the 64-bit
# FNV-1a hash of each row's bytes as 16 hex digits, prompt rows then gen rows.
# Usage: hash_rows.py OUT TIER
import json
import os
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return '%016x' % h


def rows(path, n_vocab):
    data = open(path, 'rb').read()
    row_bytes = 4 * n_vocab
    assert len(data) % row_bytes == 0, path
    return [fnv1a64(data[i:i + row_bytes]) for i in range(0, len(data), row_bytes)]


def main():
    out, tier = sys.argv[1], sys.argv[2]
    cases = {}
    for f in sorted(os.listdir(out)):
        if not f.endswith('.gen.f32'):
            continue
        name = f[:-len('.gen.f32')]
        n_vocab = 512  # every model of ../shared/reference has the 512-token stories260K vocabulary
        cases[name] = {'prompt': rows(os.path.join(out, name + '.prompt.f32'), n_vocab),
                       'gen': rows(os.path.join(out, name + '.gen.f32'), n_vocab)}
    json.dump({'tier': tier, 'hash': 'fnv1a64 of each row of n_vocab little-endian float32', 'cases': cases},
              sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write('\n')


main()
