// SPDX-License-Identifier: MIT
// The vision encoders against libmtmd: embeddings of the reference images for each projector.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "golden/shared_dir.h"
#include "media/mmproj.h"

namespace sniper {
namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> b = read_bytes(path);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

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
