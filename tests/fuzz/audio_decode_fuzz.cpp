// SPDX-License-Identifier: MIT
// libFuzzer entry point for audio decoding (media/media_decoder.h: WAV, FLAC and MP3 through
// libsndfile, OGG Vorbis through libvorbisfile, OGG Opus through libopusfile, mono mixdown,
// resampling to 16 kHz with libsamplerate): any input must
// decode or fail cleanly within the limits, and decoded audio must be mono at 16 kHz, finite,
// non-empty and no longer than the duration limit allows (plus the resampler's rounding).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "media/media_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sniper::MediaLimits limits;
  limits.max_audio_seconds = 20;
  limits.max_audio_channels = 8;
  auto media = sniper::decode_media(std::span<const uint8_t>(data, size), limits);
  if (!media.ok() || media->kind != sniper::MediaKind::kAudio) return 0;
  const sniper::Audio& a = media->audio;
  if (a.sample_rate != sniper::kAudioSampleRate || a.samples.empty() || a.source_channels < 1 ||
      a.source_channels > limits.max_audio_channels || a.source_rate < sniper::kAudioMinSourceRate ||
      a.source_rate > sniper::kAudioMaxSourceRate ||
      a.samples.size() > static_cast<size_t>(limits.max_audio_seconds * a.sample_rate) + 64) {
    std::abort();
  }
  for (float s : a.samples) {
    if (!std::isfinite(s)) std::abort();
  }
  return 0;
}
