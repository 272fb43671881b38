// SPDX-License-Identifier: MIT
// WebP through libwebp: the header's features first (size, animation), then the still image
// decoded straight to 8-bit RGB (an alpha channel is dropped, not composited). Animated WebP is
// refused by name. stb_image (and so llama.cpp's mtmd) reads no WebP at all.
#include <webp/decode.h>

#include <cstring>

#include "media/media_decoder.h"

namespace sniper {

namespace {

const char* webp_status_name(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "the file ends early (truncated)";
  }
  return "unknown error";
}

}  // namespace

bool sniff_webp(std::span<const uint8_t> bytes) {
  return bytes.size() >= 12 && std::memcmp(bytes.data(), "RIFF", 4) == 0 &&
         std::memcmp(bytes.data() + 8, "WEBP", 4) == 0;
}

Result<DecodedMedia> decode_webp(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  WebPBitstreamFeatures features;
  const VP8StatusCode st = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (st != VP8_STATUS_OK) return make_error("webp image is corrupt: %s", webp_status_name(st));
  if (features.has_animation) return make_error("webp image is animated; only still WebP images are supported");
  SNIPER_TRY(check_image_size("webp", features.width, features.height, limits));
  DecodedMedia out;
  out.kind = MediaKind::kImage;
  out.format = "webp";
  out.image.width = features.width;
  out.image.height = features.height;
  const size_t stride = static_cast<size_t>(features.width) * 3;
  out.image.rgb.resize(stride * static_cast<size_t>(features.height));
  if (WebPDecodeRGBInto(bytes.data(), bytes.size(), out.image.rgb.data(), out.image.rgb.size(),
                        static_cast<int>(stride)) == nullptr) {
    return make_error("webp image is corrupt: the pixel data does not decode (truncated or damaged)");
  }
  return out;
}

}  // namespace sniper
