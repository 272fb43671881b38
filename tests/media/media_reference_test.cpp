// SPDX-License-Identifier: MIT
// The media cases of tests/media/reference (made by scripts/mm/make_references.py with llama.cpp's
// libmtmd, never with Sniper): images of other sizes and aspect ratios (downscaled to the token
// maximum, upscaled to the minimum, extreme ratios), a dense Qwen3.5 with an f16 qwen3vl_merger
// projector, a Gemma 4 E-model (per-layer inputs, shared KV) with a q8_0 gemma4v projector and
// GELU-quick. Per case:
//   * the projector written again by `synth --mmproj` has the reference file's SHA-256;
//   * the encoder's input tensor (the preprocessed image) has mtmd's size and SHA-256: bit for bit;
//   * the embeddings have mtmd's SHA-256 (every tier; NMSE of the first values is printed and
//     bounded by 1e-5 so a failure shows its size), for all but the largest image;
//   * with a prompt: mtmd's chunks, and logits within NMSE 1e-4 per row, top-1 equal where the
//     reference margin is >= 0.03.
// Also: a gemma4v image whose patch grid exceeds the position table is an error naming both (the
// reference aborts there).
#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/media_prompt.h"
#include "engine/model.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "media/mmproj.h"
#include "media/test_reference_files.h"
#include "synth/synth_mmproj.h"

namespace sniper {
namespace {

using test::read_bytes;
using test::sha256_hex;

const std::string kRefDir = std::string(SNIPER_SOURCE_DIR) + "/tests/media/reference";

// make_media.py's img.png formula at any size.
Image gradient(int64_t w, int64_t h) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<size_t>(w * h * 3));
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      uint8_t* p = img.rgb.data() + (y * w + x) * 3;
      p[0] = static_cast<uint8_t>(x * 255 / w);
      p[1] = static_cast<uint8_t>(y * 255 / h);
      p[2] = static_cast<uint8_t>((x * y) % 256);
    }
  }
  return img;
}

// The projector of a case: shared, or written again from its synth arguments.
std::string projector_path(const nlohmann::json& meta, const std::string& name, const std::string& lm_path) {
  if (meta.contains("mmproj")) return shared_dir() + "/models/mm/" + meta["mmproj"].get<std::string>() + ".mmproj.gguf";
  auto model = Model::load(lm_path, ModelLoadOptions{});
  EXPECT_TRUE(model.ok());
  return test::write_synth_projector(meta, name, (*model)->config().dim);
}

class MediaReference : public ::testing::TestWithParam<std::string> {};

TEST_P(MediaReference, MatchesLibmtmd) {
  const std::string name = GetParam();
  const std::string dir = kRefDir + "/" + name;
  std::ifstream mf(dir + "/case.json");
  const nlohmann::json meta = nlohmann::json::parse(mf);
  const std::string lm_path = shared_dir() + "/models/" + meta["lm"].get<std::string>() + ".gguf";
  const std::string mm_path = projector_path(meta, name, lm_path);
  auto mm = Mmproj::load(mm_path, {});
  ASSERT_TRUE(mm.ok()) << mm.error().message;
  if (meta.contains("synth")) std::filesystem::remove(mm_path);
  const Image img = gradient(meta["image"]["width"].get<int64_t>(), meta["image"]["height"].get<int64_t>());
  auto pre = (*mm)->preprocess(img);
  ASSERT_TRUE(pre.ok()) << pre.error().message;
  EXPECT_EQ(pre->width, meta["inp_raw"]["width"].get<int64_t>());
  EXPECT_EQ(pre->height, meta["inp_raw"]["height"].get<int64_t>());
  EXPECT_EQ(sha256_hex(pre->planar.data(), pre->planar.size() * sizeof(float)),
            meta["inp_raw"]["sha256"].get<std::string>())
      << "the preprocessed image differs from mtmd's";
  const int64_t n_floats = meta["embd"]["n_floats"].get<int64_t>();
  if (n_floats > 100000) return;  // the largest image: preprocessing only (its encode takes seconds)
  ThreadPool pool(2);
  auto chunk = (*mm)->encode_preprocessed(*pre, MediaHash{}, pool);
  ASSERT_TRUE(chunk.ok()) << chunk.error().message;
  ASSERT_EQ(static_cast<int64_t>(chunk->embd.size()), n_floats);
  const std::vector<uint8_t> head_bytes = read_bytes(dir + "/embd_head.f32");
  ASSERT_GE(head_bytes.size(), 4u) << dir << "/embd_head.f32 is missing or empty";
  std::vector<float> head(head_bytes.size() / 4);
  std::memcpy(head.data(), head_bytes.data(), head_bytes.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    err += (chunk->embd[i] - head[i]) * static_cast<double>(chunk->embd[i] - head[i]);
    norm += static_cast<double>(head[i]) * head[i];
  }
  const bool exact = sha256_hex(chunk->embd.data(), chunk->embd.size() * 4) == meta["embd"]["sha256"];
  std::printf("%s: %lldx%lld -> %lldx%lld, %lld tokens, embeddings %s (NMSE of the first %zu: %.3g)\n", name.c_str(),
              static_cast<long long>(img.width), static_cast<long long>(img.height), static_cast<long long>(pre->width),
              static_cast<long long>(pre->height), static_cast<long long>(chunk->n_tokens()),
              exact ? "bit-exact" : "differ", head.size(), err / norm);
  EXPECT_LE(err / norm, 1e-5);
  EXPECT_TRUE(exact) << "the embeddings are not libmtmd's bits";
  if (!meta.contains("prompt")) return;

  // The language model with the image in the prompt.
  ModelLoadOptions lo;
  lo.n_ctx = 512;
  if ((*mm)->vision_config().non_causal) lo.media_chunk_tokens = (*mm)->vision_config().max_tokens;
  auto model = Model::load(lm_path, lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  SessionOptions so;
  so.batch = (*model)->planned_batch();
  so.n_threads = 2;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok()) << session.error().message;
  auto tok = (*model)->tokenizer();
  ASSERT_TRUE(tok.ok());
  std::vector<MediaChunk> media = {std::move(chunk).value()};
  auto prompt = build_media_prompt(**tok, (*model)->config(), meta["prompt"].get<std::string>(), media, true);
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  ASSERT_NO_FATAL_FAILURE(test::expect_mtmd_chunks(*prompt, (*model)->config(), meta["chunks"]));
  ASSERT_TRUE((*session)->eval_prompt(*prompt).ok());
  std::vector<float> got = (*session)->last_logits();
  for (int32_t id : meta["gen_ids"].get<std::vector<int32_t>>()) {
    const int32_t one[1] = {id};
    ASSERT_TRUE((*session)->eval(one).ok());
    got.insert(got.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
  }
  const std::vector<uint8_t> lb = read_bytes(dir + "/logits.f32");
  std::vector<float> want(lb.size() / 4);
  std::memcpy(want.data(), lb.data(), lb.size());
  ASSERT_EQ(got.size(), want.size());
  const size_t vocab = static_cast<size_t>((*model)->config().vocab_size);
  double worst = 0;
  for (size_t r = 0; r * vocab < want.size(); ++r) {
    const float* a = got.data() + r * vocab;
    const float* b = want.data() + r * vocab;
    double num = 0, den = 0;
    size_t ta = 0, tb = 0;
    for (size_t i = 0; i < vocab; ++i) {
      num += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
      den += static_cast<double>(b[i]) * b[i];
      ta = a[i] > a[ta] ? i : ta;
      tb = b[i] > b[tb] ? i : tb;
    }
    float second = -INFINITY;
    for (size_t i = 0; i < vocab; ++i) second = i != tb ? std::max(second, b[i]) : second;
    worst = std::max(worst, num / den);
    EXPECT_LE(num / den, 1e-4) << "row " << r;
    if (b[tb] - second >= 0.03f) {
      EXPECT_EQ(ta, tb) << "row " << r;
    }
  }
  std::printf("%s: logits worst row NMSE %.3g\n", name.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Cases, MediaReference,
                         ::testing::Values("pre-gemma4v-97x61", "pre-gemma4v-1400x1000", "pre-gemma4v-40x200",
                                           "pre-qwen3vl-97x61", "pre-qwen3vl-300x20", "pre-qwen3vl-2100x2000",
                                           "qwen35-qwen3vl-f16", "gemma4e-gemma4v-q8_0"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

TEST(MediaReference, PatchGridOverThePositionTableIsAnError) {
  // 20 x 300 resizes to 96 x 1200: 75 patch rows, over the 64-row position table (llama.cpp's
  // get_rows asserts and aborts on it).
  auto mm = Mmproj::load(shared_dir() + "/models/mm/syn-gemma4v-small.mmproj.gguf", {});
  ASSERT_TRUE(mm.ok());
  auto pre = (*mm)->preprocess(gradient(20, 300));
  ASSERT_TRUE(pre.ok());
  ThreadPool pool(2);
  auto chunk = (*mm)->encode_preprocessed(*pre, MediaHash{}, pool);
  ASSERT_FALSE(chunk.ok());
  EXPECT_NE(chunk.error().message.find("6x75 patches, over the projector's 64 positions per side"), std::string::npos)
      << chunk.error().message;
}

}  // namespace
}  // namespace sniper
