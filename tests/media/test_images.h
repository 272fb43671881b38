// SPDX-License-Identifier: MIT
// Test images written with the same libraries' encoders (libpng, libjpeg-turbo, libwebp, giflib):
// every PNG colour type and bit depth, interlaced or not, baseline and progressive JPEG, lossless
// and lossy WebP, GIF with a local frame, transparency and interlacing. Deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sniper::test {

struct RawImage {
  int width = 0;
  int height = 0;
  int channels = 3;               // samples per pixel in `samples`
  int bit_depth = 8;              // 1, 2, 4, 8 or 16 (PNG); 8 otherwise
  std::vector<uint16_t> samples;  // [height][width][channels]
};

// A smooth pattern with edges (gradients, a checker, a disc), channels 1..4, values up to
// 2^bit_depth - 1.
RawImage pattern(int width, int height, int channels, int bit_depth, uint32_t seed = 1);

enum class PngColor { kGray, kGrayAlpha, kRgb, kRgba, kPalette };
// PNG of `img` (channels must fit the colour type: 1, 2, 3, 4; palette takes 3-channel 8-bit
// pixels and builds a palette of up to 256 colours, with a tRNS entry when with_trns).
std::vector<uint8_t> write_png(const RawImage& img, PngColor color, bool interlaced, bool with_trns = false);

// JPEG of an 8-bit 1- or 3-channel image.
std::vector<uint8_t> write_jpeg(const RawImage& img, int quality, bool progressive);

// WebP of an 8-bit 3-channel image, lossless or lossy.
std::vector<uint8_t> write_webp(const RawImage& img, bool lossless, int quality = 80);

// GIF89a: a screen of screen_w x screen_h, one frame of the image's size at (left, top), colours
// quantised to 6x6x6 levels, index `transparent` (or -1) transparent, optionally interlaced, and
// n_frames - 1 further frames after it.
std::vector<uint8_t> write_gif(const RawImage& img, int screen_w, int screen_h, int left, int top, int transparent,
                               bool interlaced, int n_frames = 1);

// 8-bit RGB bytes of a 3-channel 8-bit image.
std::vector<uint8_t> rgb_bytes(const RawImage& img);

}  // namespace sniper::test
