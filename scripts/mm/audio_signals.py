# SPDX-License-Identifier: MIT
"""The test signals of the audio references (make_audio_references.py, make_gemma4a_references.py)
and the 16 kHz mono 16-bit WAV they are written as. tests/media/audio_reference_test.cpp and
audio_mel_test.cpp regenerate them with the same formulas, so change both sides together."""
import math
import struct


def tone(n):
    """make_media.py's tone.wav: 440 Hz + 880 Hz at 16 kHz."""
    return [int(8000 * (math.sin(2 * math.pi * 440 * i / 16000) + 0.5 * math.sin(2 * math.pi * 880 * i / 16000)))
            for i in range(n)]


def noise(n):
    """A ramp plus an LCG's noise, clipped to int16."""
    out, state = [], 12345
    for i in range(n):
        state = (state * 1103515245 + 12345) % (1 << 31)
        v = ((i * 37) % 400 - 200) * 40 + ((state >> 16) % 8001) - 4000
        out.append(max(-32768, min(32767, v)))
    return out


def wav(samples):
    """16 kHz mono PCM16 WAV bytes."""
    pcm = struct.pack('<%dh' % len(samples), *samples)
    return (b'RIFF' + struct.pack('<I', 36 + len(pcm)) + b'WAVEfmt ' +
            struct.pack('<IHHIIHH', 16, 1, 1, 16000, 32000, 2, 16) + b'data' + struct.pack('<I', len(pcm)) + pcm)
