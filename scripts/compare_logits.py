#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Per-row normalized squared error of `sniper logits` output against ../shared/reference.
# Usage: scripts/compare_logits.py OURS.f32 REFERENCE_DIR   (pure Python, no numpy)
import struct
import sys


def rows(path, n_vocab):
    data = open(path, 'rb').read()
    n = len(data) // 4
    vals = struct.unpack('<%df' % n, data)
    return [vals[i * n_vocab:(i + 1) * n_vocab] for i in range(n // n_vocab)]


def main():
    ours_path, ref_dir = sys.argv[1], sys.argv[2].rstrip('/')
    import json
    meta = json.load(open(ref_dir + '/meta.json'))
    n_vocab = meta['hparams']['n_vocab']
    ref = rows(ref_dir + '/prompt_logits.f32', n_vocab) + rows(ref_dir + '/gen_logits.f32', n_vocab)
    ours = rows(ours_path, n_vocab)
    if len(ours) != len(ref):
        sys.exit('row count %d differs from the reference %d' % (len(ours), len(ref)))
    out = []
    worst = (0.0, -1)
    for i, (a, b) in enumerate(zip(ours, ref)):
        num = sum((x - y) ** 2 for x, y in zip(a, b))
        den = sum(y * y for y in b)
        nse = num / den if den else num
        worst = max(worst, (nse, i))
        out.append('%d:%.1e' % (i, nse))
    print(' '.join(out))
    print('worst %.3e at row %d' % worst)


if __name__ == '__main__':
    main()
