// SPDX-License-Identifier: MIT
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>
// clang-format on
#include "media/test_images.h"

#include <gif_lib.h>
#include <png.h>
#include <webp/encode.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

namespace sniper::test {

RawImage pattern(int width, int height, int channels, int bit_depth, uint32_t seed) {
  RawImage img;
  img.width = width;
  img.height = height;
  img.channels = channels;
  img.bit_depth = bit_depth;
  img.samples.resize(static_cast<size_t>(width) * height * channels);
  const double maxv = (1 << bit_depth) - 1;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double fx = static_cast<double>(x) / std::max(1, width - 1),
                   fy = static_cast<double>(y) / std::max(1, height - 1);
      const double dx = fx - 0.5, dy = fy - 0.45;
      const bool disc = dx * dx + dy * dy < 0.08;
      const bool checker = ((x / 5) + (y / 7) + static_cast<int>(seed)) % 2 == 0;
      for (int c = 0; c < channels; ++c) {
        double v;
        switch (c) {
          case 0: v = fx; break;
          case 1: v = disc ? 1.0 - fy : fy; break;
          case 2: v = checker ? 0.85 : 0.15 * fx; break;
          default: v = 0.25 + 0.75 * fy; break;  // alpha
        }
        img.samples[(static_cast<size_t>(y) * width + x) * channels + c] = static_cast<uint16_t>(std::lround(v * maxv));
      }
    }
  }
  return img;
}

std::vector<uint8_t> rgb_bytes(const RawImage& img) {
  std::vector<uint8_t> out(static_cast<size_t>(img.width) * img.height * 3);
  for (size_t p = 0; p < out.size() / 3; ++p) {
    for (int c = 0; c < 3; ++c) out[p * 3 + c] = static_cast<uint8_t>(img.samples[p * img.channels + c]);
  }
  return out;
}

namespace {

void png_write_to(png_structp png, png_bytep data, png_size_t n) {
  auto* out = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}
void png_flush_noop(png_structp) {}
void png_error_throw(png_structp, png_const_charp msg) { throw std::runtime_error(msg); }

uint8_t level6(uint16_t v) { return static_cast<uint8_t>((v * 5 + 127) / 255); }

}  // namespace

std::vector<uint8_t> write_png(const RawImage& img, PngColor color, bool interlaced, bool with_trns) {
  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_error_throw, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, png_write_to, png_flush_noop);
  int type = PNG_COLOR_TYPE_RGB;
  switch (color) {
    case PngColor::kGray: type = PNG_COLOR_TYPE_GRAY; break;
    case PngColor::kGrayAlpha: type = PNG_COLOR_TYPE_GRAY_ALPHA; break;
    case PngColor::kRgb: type = PNG_COLOR_TYPE_RGB; break;
    case PngColor::kRgba: type = PNG_COLOR_TYPE_RGB_ALPHA; break;
    case PngColor::kPalette: type = PNG_COLOR_TYPE_PALETTE; break;
  }
  const int depth = color == PngColor::kPalette ? 8 : img.bit_depth;
  png_set_IHDR(png, info, img.width, img.height, depth, type, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  std::vector<uint8_t> indices;
  if (color == PngColor::kPalette) {
    std::vector<png_color> palette(216);
    for (int i = 0; i < 216; ++i) {
      palette[i] = {static_cast<png_byte>(i / 36 * 51), static_cast<png_byte>(i / 6 % 6 * 51),
                    static_cast<png_byte>(i % 6 * 51)};
    }
    png_set_PLTE(png, info, palette.data(), 216);
    if (with_trns) {
      std::vector<png_byte> alpha(216, 255);
      alpha[0] = 0;
      alpha[7] = 128;
      png_set_tRNS(png, info, alpha.data(), 216, nullptr);
    }
    indices.resize(static_cast<size_t>(img.width) * img.height);
    for (size_t p = 0; p < indices.size(); ++p) {
      const uint16_t* s = &img.samples[p * img.channels];
      indices[p] = static_cast<uint8_t>(level6(s[0]) * 36 + level6(s[1]) * 6 + level6(s[2]));
    }
  } else if (with_trns && (type == PNG_COLOR_TYPE_RGB || type == PNG_COLOR_TYPE_GRAY)) {
    png_color_16 key{};
    key.red = key.green = key.blue = key.gray = img.samples[0];
    png_set_tRNS(png, info, nullptr, 0, &key);
  }
  png_write_info(png, info);
  if (depth == 16) png_set_swap(png);  // samples are host-order uint16 below
  const int channels = color == PngColor::kPalette ? 1 : img.channels;
  const size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<uint8_t> rows(row_bytes * img.height, 0);
  for (int y = 0; y < img.height; ++y) {
    uint8_t* row = rows.data() + row_bytes * y;
    for (int x = 0; x < img.width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const size_t i = static_cast<size_t>(x) * channels + c;
        const uint16_t v = color == PngColor::kPalette
                               ? indices[static_cast<size_t>(y) * img.width + x]
                               : img.samples[(static_cast<size_t>(y) * img.width + x) * img.channels + c];
        if (depth == 16) {
          std::memcpy(row + 2 * i, &v, 2);
        } else if (depth == 8) {
          row[i] = static_cast<uint8_t>(v);
        } else {
          const size_t bit = i * depth;
          row[bit / 8] |= static_cast<uint8_t>(v << (8 - depth - bit % 8));
        }
      }
    }
  }
  std::vector<png_bytep> ptrs(img.height);
  for (int y = 0; y < img.height; ++y) ptrs[y] = rows.data() + row_bytes * y;
  png_write_image(png, ptrs.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

std::vector<uint8_t> write_jpeg(const RawImage& img, int quality, bool progressive) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = img.width;
  cinfo.image_height = img.height;
  cinfo.input_components = img.channels;
  cinfo.in_color_space = img.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(img.width) * img.channels);
  while (cinfo.next_scanline < cinfo.image_height) {
    for (size_t i = 0; i < row.size(); ++i) {
      row[i] = static_cast<uint8_t>(img.samples[static_cast<size_t>(cinfo.next_scanline) * row.size() + i]);
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&cinfo, &r, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<uint8_t> out(buf, buf + size);
  std::free(buf);
  return out;
}

std::vector<uint8_t> write_webp(const RawImage& img, bool lossless, int quality) {
  const std::vector<uint8_t> rgb = rgb_bytes(img);
  uint8_t* buf = nullptr;
  const size_t n =
      lossless ? WebPEncodeLosslessRGB(rgb.data(), img.width, img.height, img.width * 3, &buf)
               : WebPEncodeRGB(rgb.data(), img.width, img.height, img.width * 3, static_cast<float>(quality), &buf);
  std::vector<uint8_t> out(buf, buf + n);
  WebPFree(buf);
  return out;
}

namespace {
int gif_write_to(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<std::vector<uint8_t>*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}
}  // namespace

std::vector<uint8_t> write_gif(const RawImage& img, int screen_w, int screen_h, int left, int top, int transparent,
                               bool interlaced, int n_frames) {
  std::vector<uint8_t> out;
  int err = 0;
  GifFileType* gif = EGifOpen(&out, gif_write_to, &err);
  EGifSetGifVersion(gif, true);
  std::vector<GifColorType> colors(256, GifColorType{0, 0, 0});
  for (int i = 0; i < 216; ++i) {
    colors[i] = {static_cast<GifByteType>(i / 36 * 51), static_cast<GifByteType>(i / 6 % 6 * 51),
                 static_cast<GifByteType>(i % 6 * 51)};
  }
  ColorMapObject* global = GifMakeMapObject(256, colors.data());
  EGifPutScreenDesc(gif, screen_w, screen_h, 8, 0, global);
  std::vector<uint8_t> idx(static_cast<size_t>(img.width) * img.height);
  for (size_t p = 0; p < idx.size(); ++p) {
    const uint16_t* s = &img.samples[p * img.channels];
    idx[p] = static_cast<uint8_t>(level6(s[0]) * 36 + level6(s[1]) * 6 + level6(s[2]));
  }
  for (int f = 0; f < n_frames; ++f) {
    if (transparent >= 0) {
      GraphicsControlBlock gcb{};
      gcb.TransparentColor = transparent;
      gcb.DisposalMode = DISPOSAL_UNSPECIFIED;
      GifByteType ext[4];
      const size_t len = EGifGCBToExtension(&gcb, ext);
      EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, static_cast<int>(len), ext);
    }
    ColorMapObject* local = f == 0 ? GifMakeMapObject(256, colors.data()) : nullptr;
    EGifPutImageDesc(gif, left, top, img.width, img.height, interlaced, local);
    static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
    for (int p = 0; p < (interlaced ? 4 : 1); ++p) {
      for (int y = interlaced ? kStart[p] : 0; y < img.height; y += interlaced ? kStep[p] : 1) {
        std::vector<uint8_t> line(idx.begin() + static_cast<ptrdiff_t>(y) * img.width,
                                  idx.begin() + static_cast<ptrdiff_t>(y + 1) * img.width);
        if (f > 0) std::fill(line.begin(), line.end(), 1);
        EGifPutLine(gif, line.data(), img.width);
      }
    }
    if (local != nullptr) GifFreeMapObject(local);
    // EGifPutImageDesc keeps a copy of the local map that giflib 5.2.1's EGifCloseFile does not
    // free (LeakSanitizer caught it): freed here, and cleared so that no release frees it twice.
    if (gif->Image.ColorMap != nullptr) {
      GifFreeMapObject(gif->Image.ColorMap);
      gif->Image.ColorMap = nullptr;
    }
  }
  GifFreeMapObject(global);
  EGifCloseFile(gif, &err);
  return out;
}

}  // namespace sniper::test
