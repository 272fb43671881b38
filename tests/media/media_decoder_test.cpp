// SPDX-License-Identifier: MIT
// The media decoders (media/media_decoder.h) on images written by the same libraries' encoders:
//   * PNG (every colour type and bit depth, interlaced, tRNS) and GIF (a frame inside a larger
//     screen, transparency, interlacing, several frames) decode to exactly stb_image's pixels
//     with 3 channels, the decoder llama.cpp's mtmd uses;
//   * JPEG is within a small distance of stb_image's (another IDCT and upsampler; the measured
//     figures are printed and bounded), lossless WebP decodes to the encoder's input exactly;
//   * limits are checked from the header before any pixel is decoded (sides, pixels: a 16 MB
//     decompression bomb fails in microseconds), bytes, and errors name the limit and the value;
//   * truncated, corrupt, empty and unknown input fails with an error naming the problem.
// With SNIPER_WRITE_IMAGE_CORPUS=DIR set, the test also writes tiny images there (the fuzz
// corpus of tests/fuzz/corpus/image_decode_fuzz was made so).
#include "media/media_decoder.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "media/test_images.h"

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#include <stb/stb_image.h>

namespace sniper {
namespace {

using test::PngColor;
using test::RawImage;

// stb_image's pixels with 3 requested channels (what mtmd_helper_bitmap_init_from_buf loads).
std::vector<uint8_t> stb_rgb(const std::vector<uint8_t>& bytes, int* w, int* h) {
  int c = 0;
  uint8_t* p = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), w, h, &c, 3);
  EXPECT_NE(p, nullptr) << stbi_failure_reason();
  if (p == nullptr) return {};
  std::vector<uint8_t> out(p, p + static_cast<size_t>(*w) * *h * 3);
  stbi_image_free(p);
  return out;
}

void expect_same_as_stb(const std::vector<uint8_t>& bytes, const char* what) {
  SCOPED_TRACE(what);
  auto got = decode_media(bytes, MediaLimits{});
  ASSERT_TRUE(got.ok()) << got.error().message;
  int w = 0, h = 0;
  const std::vector<uint8_t> want = stb_rgb(bytes, &w, &h);
  ASSERT_EQ(got->image.width, w);
  ASSERT_EQ(got->image.height, h);
  ASSERT_EQ(got->image.rgb.size(), want.size());
  EXPECT_TRUE(got->image.rgb == want);
}

void maybe_write_corpus(const std::string& name, const std::vector<uint8_t>& bytes) {
  const char* dir = std::getenv("SNIPER_WRITE_IMAGE_CORPUS");
  if (dir == nullptr) return;
  std::ofstream(std::string(dir) + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(MediaDecoder, PngMatchesStbImageForEveryColourTypeAndDepth) {
  struct V {
    PngColor color;
    int channels;
    std::initializer_list<int> depths;
  };
  const V variants[] = {{PngColor::kGray, 1, {1, 2, 4, 8, 16}},
                        {PngColor::kGrayAlpha, 2, {8, 16}},
                        {PngColor::kRgb, 3, {8, 16}},
                        {PngColor::kRgba, 4, {8, 16}},
                        {PngColor::kPalette, 3, {8}}};
  for (const V& v : variants) {
    for (int depth : v.depths) {
      for (bool interlaced : {false, true}) {
        for (bool trns : {false, true}) {
          if (trns && (v.color == PngColor::kGrayAlpha || v.color == PngColor::kRgba)) continue;
          const RawImage img = test::pattern(37, 23, v.channels, v.color == PngColor::kPalette ? 8 : depth);
          const std::vector<uint8_t> png = test::write_png(img, v.color, interlaced, trns);
          const std::string what = "png color " + std::to_string(static_cast<int>(v.color)) + " depth " +
                                   std::to_string(depth) + (interlaced ? " interlaced" : "") + (trns ? " trns" : "");
          expect_same_as_stb(png, what.c_str());
          if (depth == 8 && !trns) {
            maybe_write_corpus("png_" + std::to_string(static_cast<int>(v.color)) + (interlaced ? "_i" : ""),
                               test::write_png(test::pattern(5, 4, v.channels, 8), v.color, interlaced));
          }
        }
      }
    }
  }
}

TEST(MediaDecoder, GifFirstFrameMatchesStbImage) {
  const RawImage img = test::pattern(19, 13, 3, 8);
  expect_same_as_stb(test::write_gif(img, 19, 13, 0, 0, -1, false), "plain");
  expect_same_as_stb(test::write_gif(img, 30, 20, 6, 4, -1, false), "frame inside a larger screen");
  expect_same_as_stb(test::write_gif(img, 30, 20, 2, 3, 0, true), "interlaced, index 0 transparent");
  expect_same_as_stb(test::write_gif(img, 19, 13, 0, 0, 43, false, 3), "three frames: the first is decoded");
  maybe_write_corpus("gif_frames", test::write_gif(test::pattern(4, 3, 3, 8), 6, 5, 1, 1, 0, true, 2));
}

TEST(MediaDecoder, JpegIsCloseToStbImage) {
  for (bool progressive : {false, true}) {
    for (int channels : {1, 3}) {
      const RawImage img = test::pattern(67, 41, channels, 8);
      const std::vector<uint8_t> jpg = test::write_jpeg(img, 90, progressive);
      auto got = decode_media(jpg, MediaLimits{});
      ASSERT_TRUE(got.ok()) << got.error().message;
      int w = 0, h = 0;
      const std::vector<uint8_t> want = stb_rgb(jpg, &w, &h);
      ASSERT_EQ(got->image.width, w);
      ASSERT_EQ(got->image.height, h);
      double sum = 0;
      int max = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        const int d = std::abs(static_cast<int>(got->image.rgb[i]) - want[i]);
        sum += d;
        max = std::max(max, d);
      }
      const double mean = sum / static_cast<double>(want.size());
      std::printf("jpeg %s %d channel(s): |libjpeg-turbo - stb_image| mean %.3f max %d\n",
                  progressive ? "progressive" : "baseline", channels, mean, max);
      EXPECT_LT(mean, 1.0);
      EXPECT_LE(max, 16);
      maybe_write_corpus(std::string("jpeg_") + (progressive ? "p" : "b") + std::to_string(channels),
                         test::write_jpeg(test::pattern(9, 7, channels, 8), 70, progressive));
    }
  }
}

TEST(MediaDecoder, LosslessWebpDecodesExactly) {
  const RawImage img = test::pattern(33, 21, 3, 8);
  auto got = decode_media(test::write_webp(img, true), MediaLimits{});
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->format, "webp");
  EXPECT_TRUE(got->image.rgb == test::rgb_bytes(img));
  auto lossy = decode_media(test::write_webp(img, false, 90), MediaLimits{});
  ASSERT_TRUE(lossy.ok()) << lossy.error().message;
  EXPECT_EQ(lossy->image.width, 33);
  maybe_write_corpus("webp_lossless", test::write_webp(test::pattern(6, 5, 3, 8), true));
  maybe_write_corpus("webp_lossy", test::write_webp(test::pattern(6, 5, 3, 8), false));
}

// A header claiming w x h with no pixel data worth the name.
std::vector<uint8_t> png_header_only(uint32_t w, uint32_t h) {
  const RawImage img = test::pattern(2, 2, 3, 8);
  std::vector<uint8_t> png = test::write_png(img, PngColor::kRgb, false);
  // IHDR data starts at byte 16; its CRC is at 29..32 (recomputed by libpng only on read: we
  // patch it with zlib's crc32 through libpng's own table via png_crc... simpler: rewrite it).
  auto put32 = [&](size_t at, uint32_t v) {
    png[at] = static_cast<uint8_t>(v >> 24);
    png[at + 1] = static_cast<uint8_t>(v >> 16);
    png[at + 2] = static_cast<uint8_t>(v >> 8);
    png[at + 3] = static_cast<uint8_t>(v);
  };
  put32(16, w);
  put32(20, h);
  uint32_t crc = 0xffffffffu;
  for (size_t i = 12; i < 29; ++i) {
    crc ^= png[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  put32(29, ~crc);
  return png;
}

TEST(MediaDecoder, LimitsAreCheckedFromTheHeaderAndNamed) {
  MediaLimits limits;
  limits.max_side = 4096;
  limits.max_pixels = 1'000'000;
  // Sides over the limit, and a pixel bomb within the sides: refused before any decoding.
  const auto t0 = std::chrono::steady_clock::now();
  auto wide = decode_media(png_header_only(5000, 10), limits);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().message.find("5000x10"), std::string::npos) << wide.error().message;
  EXPECT_NE(wide.error().message.find("4096 pixels per side"), std::string::npos) << wide.error().message;
  auto bomb = decode_media(png_header_only(4000, 4000), limits);
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.error().message.find("16000000 pixels"), std::string::npos) << bomb.error().message;
  EXPECT_NE(bomb.error().message.find("limit of 1000000"), std::string::npos) << bomb.error().message;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  // The same through every format's header.
  const RawImage big = test::pattern(1200, 1000, 3, 8);
  for (const auto& [name, bytes] :
       {std::pair<const char*, std::vector<uint8_t>>{"jpeg", test::write_jpeg(big, 50, false)},
        {"webp", test::write_webp(big, false, 30)},
        {"gif", test::write_gif(test::pattern(8, 8, 3, 8), 1200, 1000, 0, 0, -1, false)}}) {
    auto r = decode_media(bytes, limits);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.error().message.find("1200x1000 = 1200000 pixels"), std::string::npos) << r.error().message;
  }
  // Bytes.
  MediaLimits tiny;
  tiny.max_bytes = 100;
  auto over = decode_media(test::write_png(test::pattern(40, 40, 3, 8), PngColor::kRgb, false), tiny);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("over the limit of 100 bytes"), std::string::npos) << over.error().message;
  EXPECT_FALSE(validate_media_limits(MediaLimits{.max_pixels = 0}).ok());
}

TEST(MediaDecoder, TruncatedCorruptEmptyAndUnknownInputFailsByName) {
  const RawImage img = test::pattern(40, 30, 3, 8);
  const std::pair<const char*, std::vector<uint8_t>> files[] = {
      {"png", test::write_png(img, PngColor::kRgb, false)},
      {"png", test::write_png(img, PngColor::kRgb, true)},
      {"jpeg", test::write_jpeg(img, 80, false)},
      {"jpeg", test::write_jpeg(img, 80, true)},
      {"webp", test::write_webp(img, true)},
      {"gif", test::write_gif(img, 40, 30, 0, 0, -1, false)},
  };
  for (const auto& [name, bytes] : files) {
    ASSERT_TRUE(decode_media(bytes, MediaLimits{}).ok()) << name;
    for (size_t cut : {bytes.size() / 4, bytes.size() / 2, bytes.size() - 20}) {
      const std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(cut));
      auto r = decode_media(part, MediaLimits{});
      ASSERT_FALSE(r.ok()) << name << " cut at " << cut << " of " << bytes.size();
      EXPECT_NE(r.error().message.find(name), std::string::npos) << r.error().message;
    }
  }
  // A PNG signature followed by garbage (../shared/tools/mm/make_media.py's bad.png).
  std::vector<uint8_t> bad = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (int i = 0; i < 300; ++i) bad.push_back(static_cast<uint8_t>(i * 37 + 11));
  auto r = decode_media(bad, MediaLimits{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("png image is corrupt"), std::string::npos) << r.error().message;
  auto empty = decode_media({}, MediaLimits{});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("empty"), std::string::npos);
  const std::string wav = "RIFF\x24\x00\x00\x00WAVEfmt ";
  auto unknown = decode_media(std::vector<uint8_t>(wav.begin(), wav.end()), MediaLimits{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("no known format (known: png, jpeg, webp, gif)"), std::string::npos)
      << unknown.error().message;
}

}  // namespace
}  // namespace sniper
