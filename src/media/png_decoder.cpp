// SPDX-License-Identifier: MIT
// PNG through libpng, to the pixels stb_image returns with 3 requested channels (what llama.cpp's
// mtmd decodes with): palettes expanded, gray replicated to RGB (1/2/4-bit gray scaled to 8 bits),
// 16-bit samples cut to their high byte, alpha and tRNS dropped (no compositing), no gamma.
// libpng reports errors by longjmp: the function that calls setjmp constructs no C++ object
// after it, and keeps its state in a struct the caller owns.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>

#include "media/media_decoder.h"

namespace sniper {

namespace {

struct PngState {
  std::span<const uint8_t> bytes;
  size_t cursor = 0;
  const MediaLimits* limits = nullptr;
  char message[256] = {};
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  bool size_ok = false;  // the header passed check_image_size
  std::vector<uint8_t>* rgb = nullptr;
  std::vector<png_bytep>* rows = nullptr;
};

void png_error_fn(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof(s->message), "%s", msg);
  png_longjmp(png, 1);
}

void png_warning_fn(png_structp, png_const_charp) {}

void png_read_fn(png_structp png, png_bytep out, png_size_t n) {
  auto* s = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > s->bytes.size() - s->cursor) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, s->bytes.data() + s->cursor, n);
  s->cursor += n;
}

// All libpng calls; returns false with s->message set on error. Returns true with s->size_ok
// false when the header's size is over the limits (the caller names the limit).
bool run_libpng(PngState* s) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, s, png_error_fn, png_warning_fn);
  if (png == nullptr) {
    std::snprintf(s->message, sizeof(s->message), "libpng could not allocate its reader");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    std::snprintf(s->message, sizeof(s->message), "libpng could not allocate its reader");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, s, png_read_fn);
  // Bounds before any pixel: libpng's own side cap (ours, check_image_size, is lower and
  // checked right after the header), ancillary chunks (compressed text or profiles may not
  // inflate past 8 MiB, at most 256 of them are kept).
  png_set_user_limits(png, 1u << 20, 1u << 20);
  png_set_chunk_cache_max(png, 256);
  png_set_chunk_malloc_max(png, 8u << 20);
  png_read_info(png, info);
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, info, &s->width, &s->height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  if (!check_image_size("png", s->width, s->height, *s->limits).ok()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return true;
  }
  s->size_ok = true;
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16) png_set_strip_16(png);
  // An alpha channel, or the one palette expansion makes of a tRNS chunk, is dropped.
  if ((color_type & PNG_COLOR_MASK_ALPHA) != 0 ||
      (color_type == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS) != 0)) {
    png_set_strip_alpha(png);
  }
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<png_size_t>(s->width) * 3) {
    png_error(png, "unexpected row layout after conversion to RGB");
  }
  s->rgb->resize(static_cast<size_t>(s->width) * s->height * 3);
  s->rows->resize(s->height);
  for (png_uint_32 y = 0; y < s->height; ++y) (*s->rows)[y] = s->rgb->data() + static_cast<size_t>(y) * s->width * 3;
  png_read_image(png, s->rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

}  // namespace

bool sniff_png(std::span<const uint8_t> bytes) {
  static constexpr uint8_t kSig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return bytes.size() >= 8 && std::memcmp(bytes.data(), kSig, 8) == 0;
}

Result<DecodedMedia> decode_png(std::span<const uint8_t> bytes, const MediaLimits& limits) {
  DecodedMedia out;
  out.kind = MediaKind::kImage;
  out.format = "png";
  std::vector<png_bytep> rows;
  PngState s;
  s.bytes = bytes;
  s.limits = &limits;
  s.rgb = &out.image.rgb;
  s.rows = &rows;
  if (!run_libpng(&s)) return make_error("png image is corrupt: %s", s.message);
  if (!s.size_ok) {
    SNIPER_TRY(check_image_size("png", s.width, s.height, limits));
    return make_error("png image size check failed");
  }
  out.image.width = s.width;
  out.image.height = s.height;
  return out;
}

}  // namespace sniper
