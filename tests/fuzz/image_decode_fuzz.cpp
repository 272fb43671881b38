// SPDX-License-Identifier: MIT
// libFuzzer entry point for media decoding (media/media_decoder.h: PNG, JPEG, WebP, GIF and the
// audio formats the table also sniffs, through the distribution's libraries) and mtmd's preprocessing: any input must
// decode or fail cleanly within the limits, and a decoded image must have exactly 3 bytes per pixel and sides within
// the limits; its preprocessing (a small dynamic-size spec) must produce the planar tensor's size.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "media/image_preprocess.h"
#include "media/media_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sniper::MediaLimits limits;
  limits.max_side = 2048;
  limits.max_pixels = 1 << 20;
  auto media = sniper::decode_media(std::span<const uint8_t>(data, size), limits);
  if (!media.ok()) return 0;
  if (media->kind == sniper::MediaKind::kAudio) {
    // Audio (the decoder table sniffs it too): mono 16 kHz within the duration limit.
    const sniper::Audio& a = media->audio;
    if (a.sample_rate != sniper::kAudioSampleRate || a.seconds() > limits.max_audio_seconds + 1.0) std::abort();
    return 0;
  }
  const sniper::Image& img = media->image;
  if (img.width < 1 || img.height < 1 || img.width > limits.max_side || img.height > limits.max_side ||
      img.width * img.height > limits.max_pixels || img.rgb.size() != static_cast<size_t>(img.width * img.height * 3)) {
    std::abort();
  }
  sniper::PreprocessSpec spec;
  spec.align = 32;
  spec.min_pixels = 4 * 32 * 32;
  spec.max_pixels = 16 * 32 * 32;
  auto pre = sniper::preprocess_image(img, spec);
  if (pre.ok() && pre->planar.size() != static_cast<size_t>(3 * pre->width * pre->height)) std::abort();
  return 0;
}
