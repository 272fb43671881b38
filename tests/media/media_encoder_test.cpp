// SPDX-License-Identifier: MIT
// The vision encoders against libmtmd: embeddings of the reference images for each projector; the
// encoder's scratch within what memory planning counts, and the preprocessing's size bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "golden/shared_dir.h"
#include "media/mmproj.h"
#include "media/test_reference_files.h"

namespace sniper {
namespace {

using test::read_bytes;
using test::read_f32;

struct Case {
  const char* name;
  const char* mmproj;
};

class EncoderReference : public ::testing::TestWithParam<Case> {};

TEST_P(EncoderReference, EmbeddingsMatchMtmd) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  auto mm = Mmproj::load(shared_dir() + "/models/mm/" + c.mmproj, {});
  ASSERT_TRUE(mm.ok()) << mm.error().message;
  ThreadPool pool(2);
  const std::vector<uint8_t> bytes = read_bytes(dir + "/img.png");
  auto chunk = (*mm)->encode(bytes, pool);
  ASSERT_TRUE(chunk.ok()) << chunk.error().message;
  const std::vector<float> ref = read_f32(dir + "/embd.f32");
  ASSERT_EQ(chunk->embd.size(), ref.size());
  double err = 0, norm = 0, max_abs = 0;
  size_t n_diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(chunk->embd[i]) - ref[i];
    err += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
    max_abs = std::max(max_abs, std::fabs(d));
    n_diff += chunk->embd[i] != ref[i];
  }
  std::printf("%s: nmse %.3g, max |diff| %.3g, %zu of %zu values differ\n", c.name, err / norm, max_abs, n_diff,
              ref.size());
  EXPECT_LE(err / norm, 1e-5);
}

// The scratch memory planning counts (Mmproj::memory().scratch_bytes) holds what the encoder
// allocates for the largest images the bounds allow: a square one at max tokens, and one scaled up
// from a thin strip at min tokens = max tokens (both sides rounded up). A strip whose short side
// mtmd holds at the alignment while the long one grows past the maximum is refused by name.
TEST_P(EncoderReference, ScratchWithinThePlannedBound) {
  const Case& c = GetParam();
  MmprojOptions o;
  o.image_min_tokens = 48;
  o.image_max_tokens = 48;
  auto mm = Mmproj::load(shared_dir() + "/models/mm/" + c.mmproj, o);
  ASSERT_TRUE(mm.ok()) << mm.error().message;
  ThreadPool pool(2);
  const PreprocessSpec& spec = (*mm)->vision_config().preprocess;
  auto image = [](int64_t w, int64_t h) {
    Image img;
    img.width = w;
    img.height = h;
    img.rgb.resize(static_cast<size_t>(3 * w * h));
    for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = static_cast<uint8_t>(i * 7 % 251);
    return img;
  };
  // The largest scaled-up output over strips up to the rounding limit (qwen3vl: the small
  // gemma4v's position table is shorter than those strips).
  std::vector<std::pair<int64_t, int64_t>> sizes = {{4000, 4000}};
  if ((*mm)->vision_config().type == ProjectorType::kQwen3VLMerger) {
    int64_t strip = 1, most = 0;
    for (int64_t side = 1; side <= spec.min_pixels / spec.align + spec.align; ++side) {
      const ImageSize t = smart_resize_size(side, 1, spec);
      if (t.width * t.height > most) most = t.width * t.height, strip = side;
    }
    sizes.emplace_back(strip, 1);
  }
  for (const auto& [w, h] : sizes) {
    const ImageSize t = smart_resize_size(w, h, spec);
    EXPECT_LE(t.width * t.height, planned_preprocessed_pixels(spec));
    auto pre = (*mm)->preprocess(image(w, h));
    ASSERT_TRUE(pre.ok()) << w << "x" << h << ": " << pre.error().message;
    auto chunk = (*mm)->encode_preprocessed(*pre, MediaHash{}, pool);
    ASSERT_TRUE(chunk.ok()) << w << "x" << h << ": " << chunk.error().message;
    EXPECT_LE((*mm)->scratch_bytes(), (*mm)->memory().scratch_bytes) << w << "x" << h;
    std::printf("%s %ldx%ld -> %ldx%ld: %ld tokens, scratch %zu of the planned %llu bytes\n", c.name,
                static_cast<long>(w), static_cast<long>(h), static_cast<long>(t.width), static_cast<long>(t.height),
                static_cast<long>(chunk->n_tokens()), (*mm)->scratch_bytes(),
                static_cast<unsigned long long>((*mm)->memory().scratch_bytes));
  }
  auto strip_over = (*mm)->preprocess(image(8000, 2));
  ASSERT_FALSE(strip_over.ok());
  EXPECT_NE(strip_over.error().message.find("too extreme an aspect ratio"), std::string::npos)
      << strip_over.error().message;
}

// smart_resize_size stays within planned_preprocessed_pixels except where it holds the short side
// at the alignment while scaling down (the refused strips): every side pair up to 300, log-uniform
// samples up to 16384 and the extremes, on the projectors' alignments and token bounds.
TEST(PreprocessBound, HoldsForEverySize) {
  struct Spec {
    int64_t align, min_tokens, max_tokens;
  };
  for (const Spec& sp : {Spec{48, 40, 280}, Spec{32, 8, 4096}, Spec{32, 8, 64}, Spec{48, 280, 280}, Spec{32, 1, 1},
                         Spec{32, 4000, 4096}}) {
    PreprocessSpec spec;
    spec.align = sp.align;
    spec.min_pixels = sp.min_tokens * sp.align * sp.align;
    spec.max_pixels = sp.max_tokens * sp.align * sp.align;
    const int64_t bound = planned_preprocessed_pixels(spec);
    int64_t refused = 0;
    auto check = [&](int64_t w, int64_t h) {
      const ImageSize t = smart_resize_size(w, h, spec);
      if (t.width * t.height <= bound) return true;
      ++refused;
      // Only a scaled-down strip: one side at the alignment, over max_pixels.
      return std::min(t.width, t.height) == sp.align && t.width * t.height > spec.max_pixels;
    };
    for (int64_t w = 1; w <= 300; ++w) {
      for (int64_t h = 1; h <= 300; ++h) ASSERT_TRUE(check(w, h)) << w << "x" << h << " align " << sp.align;
    }
    const int64_t big = 16384;
    uint64_t x = 88172645463325252ull;
    auto next = [&x] {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      return x;
    };
    for (int i = 0; i < 200000; ++i) {
      const auto w = static_cast<int64_t>(std::exp(static_cast<double>(next() % 1000000) / 1e6 * std::log(big)));
      const auto h = static_cast<int64_t>(std::exp(static_cast<double>(next() % 1000000) / 1e6 * std::log(big)));
      const int64_t cw = std::clamp<int64_t>(w, 1, big), ch = std::clamp<int64_t>(h, 1, big);
      ASSERT_TRUE(check(cw, ch)) << cw << "x" << ch << " align " << sp.align;
    }
    for (int64_t a : {int64_t{1}, int64_t{2}, sp.align, big - 1, big}) {
      for (int64_t b : {int64_t{1}, int64_t{2}, sp.align, big - 1, big}) ASSERT_TRUE(check(a, b)) << a << "x" << b;
    }
    std::printf("align %ld tokens [%ld, %ld]: bound %ld pixels (max_pixels %ld), %ld strips over it\n",
                static_cast<long>(sp.align), static_cast<long>(sp.min_tokens), static_cast<long>(sp.max_tokens),
                static_cast<long>(bound), static_cast<long>(spec.max_pixels), static_cast<long>(refused));
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, EncoderReference,
                         ::testing::Values(Case{"syn-gemma4v-small", "syn-gemma4v-small.mmproj.gguf"},
                                           Case{"syn-qwen3vl-small", "syn-qwen3vl-small.mmproj.gguf"}),
                         [](const auto& info) {
                           std::string s = info.param.name;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace sniper
