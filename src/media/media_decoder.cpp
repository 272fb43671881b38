// SPDX-License-Identifier: MIT
#include "media/media_decoder.h"

#include <string>

namespace sniper {

namespace {

constexpr MediaDecoder kDecoders[] = {
    {"png", MediaKind::kImage, sniff_png, decode_png},
    {"jpeg", MediaKind::kImage, sniff_jpeg, decode_jpeg},
    {"webp", MediaKind::kImage, sniff_webp, decode_webp},
    {"gif", MediaKind::kImage, sniff_gif, decode_gif},
};

}  // namespace

const char* media_kind_name(MediaKind kind) {
  switch (kind) {
    case MediaKind::kImage: return "image";
    case MediaKind::kAudio: return "audio";
  }
  return "?";
}

Status validate_media_limits(const MediaLimits& limits) {
  if (limits.max_bytes < 1 || limits.max_bytes > (uint64_t{1} << 32)) {
    return make_error("media byte limit is %llu but must be in [1, 4 GiB]",
                      static_cast<unsigned long long>(limits.max_bytes));
  }
  if (limits.max_side < 1 || limits.max_side > 65535) {
    return make_error("image side limit is %lld pixels but must be in [1, 65535]",
                      static_cast<long long>(limits.max_side));
  }
  if (limits.max_pixels < 1 || limits.max_pixels > (int64_t{1} << 30)) {
    return make_error("image pixel limit is %lld but must be in [1, 2^30]", static_cast<long long>(limits.max_pixels));
  }
  if (limits.max_media < 0 || limits.max_media > 1024) {
    return make_error("media-per-request limit is %lld but must be in [0, 1024]",
                      static_cast<long long>(limits.max_media));
  }
  return ok_status();
}

std::span<const MediaDecoder> media_decoders() { return kDecoders; }

const MediaDecoder* find_media_decoder(std::span<const uint8_t> bytes) {
  for (const MediaDecoder& d : kDecoders) {
    if (d.sniff(bytes)) return &d;
  }
  return nullptr;
}

Status check_image_size(const char* format, int64_t width, int64_t height, const MediaLimits& limits) {
  if (width < 1 || height < 1) {
    return make_error("%s image is %lldx%lld pixels: both sides must be at least 1", format,
                      static_cast<long long>(width), static_cast<long long>(height));
  }
  if (width > limits.max_side || height > limits.max_side) {
    return make_error("%s image is %lldx%lld pixels, over the limit of %lld pixels per side", format,
                      static_cast<long long>(width), static_cast<long long>(height),
                      static_cast<long long>(limits.max_side));
  }
  if (width * height > limits.max_pixels) {
    return make_error("%s image is %lldx%lld = %lld pixels, over the limit of %lld pixels", format,
                      static_cast<long long>(width), static_cast<long long>(height),
                      static_cast<long long>(width * height), static_cast<long long>(limits.max_pixels));
  }
  return ok_status();
}

Result<DecodedMedia> decode_media(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    return make_error("media item is %zu bytes, over the limit of %llu bytes", bytes.size(),
                      static_cast<unsigned long long>(limits.max_bytes));
  }
  if (bytes.empty()) return make_error("media item is empty (0 bytes)");
  const MediaDecoder* d = find_media_decoder(bytes);
  if (d == nullptr) {
    std::string known;
    for (const MediaDecoder& k : kDecoders) {
      if (!known.empty()) known += ", ";
      known += k.format;
    }
    return make_error("media item (%zu bytes) is in no known format (known: %s)", bytes.size(), known.c_str());
  }
  return d->decode(bytes, limits);
}

}  // namespace sniper
