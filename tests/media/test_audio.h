// SPDX-License-Identifier: MIT
// Test audio written with libsndfile's encoders (the same library the decoders use, with
// libFLAC, libvorbis, libopus and LAME behind it): WAV (16-bit, float), FLAC, OGG Vorbis, OGG
// Opus and MP3, from interleaved float samples. Deterministic.
#pragma once

#include <cstdint>
#include <vector>

namespace sniper::test {

enum class AudioFormat { kWav16, kWavFloat, kFlac16, kOggVorbis, kOggOpus, kMp3 };

// `interleaved` holds frames x channels samples in [-1, 1]; the 16-bit formats store
// round(x * 32768) clamped to [-32768, 32767].
std::vector<uint8_t> write_audio(AudioFormat format, int channels, int sample_rate,
                                 const std::vector<float>& interleaved);

// A sine of `hz` at `amplitude`, `n` samples at `sample_rate`, phase 0.
std::vector<float> sine(double hz, double amplitude, int sample_rate, int64_t n);

}  // namespace sniper::test
