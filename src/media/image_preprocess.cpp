// SPDX-License-Identifier: MIT
#include "media/image_preprocess.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace sniper {

namespace {

// mtmd-image.cpp's lerp, unfused (mtmd is compiled for the baseline ISA).
inline float lerp(float s, float e, float t) { return s + (e - s) * t; }

// mtmd's resize_bilinear: sample positions x * (src_w - 1) / (dst_w - 1), 8-bit truncation.
void resize_bilinear(const Image& src, Image& dst, int64_t tw, int64_t th) {
  const int sw = static_cast<int>(src.width), sh = static_cast<int>(src.height);
  if (tw <= 0) tw = 1;
  if (th <= 0) th = 1;
  dst.width = tw;
  dst.height = th;
  dst.rgb.assign(static_cast<size_t>(tw * th * 3), 0);
  const float x_ratio = tw > 1 ? static_cast<float>(sw - 1) / static_cast<float>(tw - 1) : 0.0f;
  const float y_ratio = th > 1 ? static_cast<float>(sh - 1) / static_cast<float>(th - 1) : 0.0f;
  for (int y = 0; y < th; ++y) {
    const float py = static_cast<float>(y) * y_ratio;
    const int y0 = std::min(static_cast<int>(py), sh - 1);
    const int y1 = std::min(y0 + 1, sh - 1);
    const float yf = py - static_cast<float>(y0);
    for (int x = 0; x < tw; ++x) {
      const float px = static_cast<float>(x) * x_ratio;
      const int x0 = std::min(static_cast<int>(px), sw - 1);
      const int x1 = std::min(x0 + 1, sw - 1);
      const float xf = px - static_cast<float>(x0);
      const uint8_t* p00 = src.rgb.data() + (static_cast<size_t>(y0) * sw + x0) * 3;
      const uint8_t* p10 = src.rgb.data() + (static_cast<size_t>(y0) * sw + x1) * 3;
      const uint8_t* p01 = src.rgb.data() + (static_cast<size_t>(y1) * sw + x0) * 3;
      const uint8_t* p11 = src.rgb.data() + (static_cast<size_t>(y1) * sw + x1) * 3;
      uint8_t* out = dst.rgb.data() + (static_cast<size_t>(y) * tw + x) * 3;
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(static_cast<float>(p00[c]), static_cast<float>(p10[c]), xf);
        const float bottom = lerp(static_cast<float>(p01[c]), static_cast<float>(p11[c]), xf);
        out[c] = static_cast<uint8_t>(lerp(top, bottom, yf));
      }
    }
  }
}

}  // namespace

ImageSize smart_resize_size(int64_t width64, int64_t height64, const PreprocessSpec& spec) {
  CHECK(width64 >= 1 && height64 >= 1 && spec.align >= 1 && spec.min_pixels >= 1 && spec.min_pixels <= spec.max_pixels);
  // mtmd computes in int and float; the sides are at most 65535 (MediaLimits) so int is exact.
  const int width = static_cast<int>(width64), height = static_cast<int>(height64);
  const int f = static_cast<int>(spec.align);
  const auto max_pixels = static_cast<int64_t>(spec.max_pixels);
  const auto min_pixels = static_cast<int64_t>(spec.min_pixels);
  auto round_by = [f](float x) { return static_cast<int>(std::round(x / static_cast<float>(f))) * f; };
  auto ceil_by = [f](float x) { return static_cast<int>(std::ceil(x / static_cast<float>(f))) * f; };
  auto floor_by = [f](float x) { return static_cast<int>(std::floor(x / static_cast<float>(f))) * f; };
  int h_bar = std::max(f, round_by(static_cast<float>(height)));
  int w_bar = std::max(f, round_by(static_cast<float>(width)));
  if (int64_t{h_bar} * w_bar > max_pixels) {
    const float beta = std::sqrt(static_cast<float>(int64_t{height} * width) / static_cast<float>(max_pixels));
    h_bar = std::max(f, floor_by(static_cast<float>(height) / beta));
    w_bar = std::max(f, floor_by(static_cast<float>(width) / beta));
  } else if (int64_t{h_bar} * w_bar < min_pixels) {
    const float beta = std::sqrt(static_cast<float>(min_pixels) / static_cast<float>(int64_t{height} * width));
    h_bar = ceil_by(static_cast<float>(height) * beta);
    w_bar = ceil_by(static_cast<float>(width) * beta);
  }
  return {w_bar, h_bar};
}

int64_t planned_preprocessed_pixels(const PreprocessSpec& spec) {
  // Unscaled: under max_pixels (the branch condition). Scaled down with neither side held at
  // align: the floors keep it under max_pixels. Scaled up: sides a <= b before the ceils with
  // a * b = min_pixels and b <= sqrt((min_pixels / align + align) * min_pixels) (a source side
  // over min_pixels / align + align rounds to an area of at least min_pixels); after them
  // (a + align)(b + align) = min_pixels + align (a + b) + align^2, and a + b = b + min_pixels / b
  // grows with b past sqrt(min_pixels).
  const double f = static_cast<double>(spec.align), mn = static_cast<double>(spec.min_pixels);
  const double b = std::sqrt((mn / f + f) * mn);
  const auto up = static_cast<int64_t>(std::ceil(mn + f * (b + mn / b) + 2 * f * f));
  return std::max(spec.max_pixels, up);
}

Image resize_bilinear_pad(const Image& src, ImageSize target) {
  Image dst;
  dst.width = target.width;
  dst.height = target.height;
  if (src.width == target.width && src.height == target.height) {
    dst.rgb = src.rgb;
    return dst;
  }
  const float scale_w = static_cast<float>(target.width) / static_cast<float>(src.width);
  const float scale_h = static_cast<float>(target.height) / static_cast<float>(src.height);
  const float scale = std::min(scale_w, scale_h);
  const int64_t new_w =
      std::min<int64_t>(static_cast<int>(std::ceil(static_cast<float>(src.width) * scale)), target.width);
  const int64_t new_h =
      std::min<int64_t>(static_cast<int>(std::ceil(static_cast<float>(src.height) * scale)), target.height);
  Image resized;
  resize_bilinear(src, resized, new_w, new_h);
  dst.rgb.assign(static_cast<size_t>(target.width * target.height * 3), 0);
  const int64_t off_x = (target.width - resized.width) / 2, off_y = (target.height - resized.height) / 2;
  for (int64_t y = 0; y < resized.height; ++y) {
    const int64_t dy = y + off_y;
    if (dy < 0 || dy >= target.height) continue;
    for (int64_t x = 0; x < resized.width; ++x) {
      const int64_t dx = x + off_x;
      if (dx < 0 || dx >= target.width) continue;
      std::copy_n(resized.rgb.data() + (y * resized.width + x) * 3, 3, dst.rgb.data() + (dy * target.width + dx) * 3);
    }
  }
  return dst;
}

Result<PreprocessedImage> preprocess_image(const Image& image, const PreprocessSpec& spec) {
  if (image.width < 1 || image.height < 1 || image.rgb.size() != static_cast<size_t>(image.width * image.height * 3)) {
    return make_error("image of %lldx%lld pixels holds %zu bytes, not 3 per pixel", static_cast<long long>(image.width),
                      static_cast<long long>(image.height), image.rgb.size());
  }
  const ImageSize target = smart_resize_size(image.width, image.height, spec);
  if (target.width < spec.align || target.height < spec.align || target.width % spec.align != 0 ||
      target.height % spec.align != 0) {
    return make_error(
        "image of %lldx%lld pixels resizes to %lldx%lld, which the encoder cannot take (sides must be "
        "positive multiples of %lld)",
        static_cast<long long>(image.width), static_cast<long long>(image.height), static_cast<long long>(target.width),
        static_cast<long long>(target.height), static_cast<long long>(spec.align));
  }
  if (target.width * target.height > planned_preprocessed_pixels(spec)) {
    return make_error(
        "image of %lldx%lld pixels has too extreme an aspect ratio: it would resize to %lldx%lld, %lld pixels, "
        "over the %lld the projector's token maximum allows (crop it, or raise --image-max-tokens)",
        static_cast<long long>(image.width), static_cast<long long>(image.height), static_cast<long long>(target.width),
        static_cast<long long>(target.height), static_cast<long long>(target.width * target.height),
        static_cast<long long>(planned_preprocessed_pixels(spec)));
  }
  const Image resized = resize_bilinear_pad(image, target);
  PreprocessedImage out;
  out.width = target.width;
  out.height = target.height;
  const size_t n = static_cast<size_t>(target.width * target.height);
  out.planar.resize(3 * n);
  for (size_t i = 0; i < n; ++i) {
    for (int c = 0; c < 3; ++c) {
      const float v = static_cast<float>(resized.rgb[3 * i + static_cast<size_t>(c)]) / 255.0f;
      out.planar[static_cast<size_t>(c) * n + i] =
          (v - spec.mean[static_cast<size_t>(c)]) / spec.std[static_cast<size_t>(c)];
    }
  }
  return out;
}

}  // namespace sniper
