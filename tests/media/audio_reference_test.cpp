// SPDX-License-Identifier: MIT
// The gemma4a cases of tests/media/reference (made by scripts/mm/make_gemma4a_references.py with
// llama.cpp's libmtmd, never with Sniper): a tiny f32 audio tower on 3 s of noise and a q8_0 one
// on 2 s of tones, both feeding the Gemma 4 E-model syn-gemma4e-small. Per case:
//   * the projector written again by synth has the reference file's SHA-256, and the WAV
//     regenerated from the script's formula has the reference WAV's;
//   * the WAV's bytes through Mmproj::encode (decode, log-mel, the conformer encoder) give
//     embeddings within NMSE 1e-5 of mtmd's, on 1 and 2 threads with the same bits;
//   * the prompt's cells are mtmd's chunks (text ids around <|audio> ... <audio|>, the audio's
//     token count), logits per row within NMSE 1e-4, top-1 equal where the reference margin is
//     >= 0.03;
//   * streamed language model weights give the resident run's bits.
// Also: audio sent to a projector without an audio encoder, an image sent to an audio-only one,
// audio over the duration limit, and a truncated WAV are errors that name the problem.
#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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
using test::read_f32;
using test::samples_of;
using test::sha256_hex;
using test::wav_of;

const std::string kRefDir = std::string(SNIPER_SOURCE_DIR) + "/tests/media/reference";

double nmse(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return num / den;
}

struct Outputs {
  std::vector<float> embd;
  std::vector<float> logits;
};

class AudioReference : public ::testing::TestWithParam<std::string> {};

TEST_P(AudioReference, MatchesLibmtmd) {
  const std::string name = GetParam();
  const std::string dir = kRefDir + "/" + name;
  std::ifstream mf(dir + "/case.json");
  const nlohmann::json meta = nlohmann::json::parse(mf);
  const std::string lm_path = shared_dir() + "/models/" + meta["lm"].get<std::string>() + ".gguf";
  const std::vector<uint8_t> wav =
      wav_of(samples_of(meta["audio"]["kind"].get<std::string>(), meta["audio"]["samples"].get<int64_t>()));
  ASSERT_EQ(sha256_hex(wav.data(), wav.size()), meta["audio"]["wav_sha256"].get<std::string>());
  const std::vector<float> want_embd = read_f32(dir + "/embd.f32");
  const std::vector<float> want_logits = read_f32(dir + "/logits.f32");
  ASSERT_EQ(static_cast<int64_t>(want_embd.size()), meta["embd"]["n_floats"].get<int64_t>());

  Outputs first;
  for (int variant = 0; variant < 2; ++variant) {
    // 0: resident, 2 threads; 1: the language model streamed, the encoder on 1 thread.
    ModelLoadOptions lo;
    lo.n_ctx = 512;
    lo.residency = variant == 0 ? ResidencyMode::kAuto : ResidencyMode::kStream;
    auto model = Model::load(lm_path, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->streams(), variant == 1);
    const std::string mm_path = test::write_synth_projector(meta, name, (*model)->config().dim);
    auto mm = Mmproj::load(mm_path, {});
    std::filesystem::remove(mm_path);
    ASSERT_TRUE(mm.ok()) << mm.error().message;
    EXPECT_TRUE((*mm)->supports(MediaKind::kAudio));
    EXPECT_FALSE((*mm)->supports(MediaKind::kImage));
    ASSERT_TRUE((*mm)->check_language_model((*model)->config().dim).ok());
    SessionOptions so;
    so.batch = (*model)->planned_batch();
    so.n_threads = 2;
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok()) << session.error().message;
    ThreadPool one(1);
    auto chunk = (*mm)->encode(wav, variant == 0 ? (*session)->pool() : one);
    ASSERT_TRUE(chunk.ok()) << chunk.error().message;
    EXPECT_EQ(chunk->kind, MediaKind::kAudio);
    EXPECT_FALSE(chunk->non_causal);
    ASSERT_EQ(chunk->embd.size(), want_embd.size());
    const double e = nmse(chunk->embd.data(), want_embd.data(), want_embd.size());
    std::printf("%s: %lld tokens, embeddings NMSE %.3g\n", name.c_str(), static_cast<long long>(chunk->n_tokens()), e);
    EXPECT_LE(e, 1e-5);
    Outputs run;
    run.embd = chunk->embd;

    auto tok = (*model)->tokenizer();
    ASSERT_TRUE(tok.ok());
    std::vector<MediaChunk> media = {std::move(chunk).value()};
    auto prompt = build_media_prompt(**tok, (*model)->config(), meta["prompt"].get<std::string>(), media, true);
    ASSERT_TRUE(prompt.ok()) << prompt.error().message;
    ASSERT_NO_FATAL_FAILURE(test::expect_mtmd_chunks(*prompt, (*model)->config(), meta["chunks"]));
    Status st = (*session)->eval_prompt(*prompt);
    ASSERT_TRUE(st.ok()) << st.error().message;
    run.logits = (*session)->last_logits();
    for (int32_t id : meta["gen_ids"].get<std::vector<int32_t>>()) {
      const int32_t ids[1] = {id};
      ASSERT_TRUE((*session)->eval(ids).ok());
      run.logits.insert(run.logits.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
    }
    ASSERT_EQ(run.logits.size(), want_logits.size());
    const size_t vocab = static_cast<size_t>((*model)->config().vocab_size);
    double worst = 0;
    for (size_t r = 0; r * vocab < want_logits.size(); ++r) {
      const float* a = run.logits.data() + r * vocab;
      const float* b = want_logits.data() + r * vocab;
      const double d = nmse(a, b, vocab);
      worst = std::max(worst, d);
      EXPECT_LE(d, 1e-4) << "row " << r;
      size_t ta = 0, tb = 0;
      for (size_t i = 0; i < vocab; ++i) {
        ta = a[i] > a[ta] ? i : ta;
        tb = b[i] > b[tb] ? i : tb;
      }
      float second = -INFINITY;
      for (size_t i = 0; i < vocab; ++i) second = i != tb ? std::max(second, b[i]) : second;
      if (b[tb] - second >= 0.03f) {
        EXPECT_EQ(ta, tb) << "row " << r;
      }
    }
    std::printf("%s: logits worst row NMSE %.3g\n", name.c_str(), worst);
    if (variant == 0) {
      first = std::move(run);
    } else {
      EXPECT_EQ(0, std::memcmp(run.embd.data(), first.embd.data(), run.embd.size() * sizeof(float)))
          << "the encoder's bits depend on the thread count";
      EXPECT_EQ(0, std::memcmp(run.logits.data(), first.logits.data(), run.logits.size() * sizeof(float)))
          << "streamed logits differ from resident ones";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, AudioReference, ::testing::Values("gemma4e-gemma4a-f32", "gemma4e-gemma4a-q8_0"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return s;
                         });

TEST(AudioReference, ErrorsNameTheProblem) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gemma4a-errors-" + std::to_string(::getpid()) + ".mmproj.gguf"))
          .string();
  SynthMmprojSpec s;
  s.projector = "gemma4a";
  s.lm_dim = 256;
  ASSERT_TRUE(write_synth_mmproj(s, path).ok());
  MmprojOptions mo;
  mo.limits.max_audio_seconds = 1;
  auto mm = Mmproj::load(path, mo);
  std::filesystem::remove(path);
  ASSERT_TRUE(mm.ok()) << mm.error().message;
  ThreadPool pool(2);
  const std::vector<uint8_t> wav = wav_of(samples_of("tone", 8000));
  EXPECT_TRUE((*mm)->encode(wav, pool).ok());
  // Over the duration limit (2 s against 1 s).
  auto longer = (*mm)->encode(wav_of(samples_of("tone", 32000)), pool);
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.error().message.find("over the limit of 1 seconds"), std::string::npos) << longer.error().message;
  // Truncated: the data chunk declares more than the file holds.
  std::vector<uint8_t> cut(wav.begin(), wav.begin() + static_cast<std::ptrdiff_t>(wav.size() / 2));
  auto truncated = (*mm)->encode(cut, pool);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message.find("truncated"), std::string::npos) << truncated.error().message;
  // An image to an audio-only projector; audio to a vision-only one.
  auto image = (*mm)->encode(read_bytes(shared_dir() + "/reference/mm/syn-gemma4v-small/img.png"), pool);
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.error().message.find("image media is not supported by the projector"), std::string::npos)
      << image.error().message;
  EXPECT_NE(image.error().message.find("it encodes: audio"), std::string::npos) << image.error().message;
  auto vision = Mmproj::load(shared_dir() + "/models/mm/syn-gemma4v-small.mmproj.gguf", {});
  ASSERT_TRUE(vision.ok());
  auto audio = (*vision)->encode(wav, pool);
  ASSERT_FALSE(audio.ok());
  EXPECT_NE(audio.error().message.find("audio media is not supported by the projector"), std::string::npos)
      << audio.error().message;
  // A projector whose audio tower does not match the language model's width.
  EXPECT_NE((*mm)->check_language_model(512).error().message.find("projects audio to embeddings of width 256"),
            std::string::npos);
}

}  // namespace
}  // namespace sniper
