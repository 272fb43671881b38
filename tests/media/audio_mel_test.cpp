// SPDX-License-Identifier: MIT
// The gemma4a log-mel spectrogram (media/audio_mel.h) against libmtmd's
// (tests/media/reference/gemma4a_mel.json, made by scripts/mm/make_audio_references.py with
// scripts/mm/dump_gemma4a_mel.cpp): the WAVs are regenerated from the same formulas (their
// SHA-256 checked), decoded by decode_media and turned into spectrograms that must equal mtmd's
// bit for bit (chunk count, frames, SHA-256 of the data, the first values) on 1 and 2 threads:
// a 2 s tone, 31.5 s of noise (two 30-second chunks), 30 s + 161 samples (a one-frame chunk),
// 25 ms and 100 samples (one frame, mostly padding). Also: the FFT and filterbank against a double-precision DFT of the
// definition (the scalar reference of the spectrum), the frame count, and the parameter and length errors.
#include "media/audio_mel.h"

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "media/media_decoder.h"

namespace sniper {
namespace {

std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr);
  std::string out;
  char buf[3];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

// The formulas of scripts/mm/make_audio_references.py.
std::vector<int16_t> tone(int n) {
  std::vector<int16_t> s(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    s[static_cast<size_t>(i)] = static_cast<int16_t>(
        static_cast<int>(8000 * (std::sin(2 * M_PI * 440 * i / 16000) + 0.5 * std::sin(2 * M_PI * 880 * i / 16000))));
  }
  return s;
}

std::vector<int16_t> noise(int n) {
  std::vector<int16_t> s(static_cast<size_t>(n));
  int64_t state = 12345;
  for (int i = 0; i < n; ++i) {
    state = (state * 1103515245 + 12345) % (int64_t{1} << 31);
    const int64_t v = ((int64_t{i} * 37) % 400 - 200) * 40 + ((state >> 16) % 8001) - 4000;
    s[static_cast<size_t>(i)] = static_cast<int16_t>(std::clamp<int64_t>(v, -32768, 32767));
  }
  return s;
}

std::vector<uint8_t> wav(const std::vector<int16_t>& s) {
  std::vector<uint8_t> b;
  b.reserve(44 + s.size() * 2);
  auto put = [&](uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto tag = [&](const char* t) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(t[i]));
  };
  const auto data = static_cast<uint32_t>(s.size() * 2);
  tag("RIFF");
  put(36 + data, 4);
  tag("WAVE");
  tag("fmt ");
  put(16, 4);
  put(1, 2);
  put(1, 2);
  put(16000, 4);
  put(32000, 4);
  put(2, 2);
  put(16, 2);
  tag("data");
  put(data, 4);
  for (int16_t v : s) put(static_cast<uint16_t>(v), 2);
  return b;
}

nlohmann::json load_reference() {
  std::ifstream f(std::string(SNIPER_SOURCE_DIR) + "/tests/media/reference/gemma4a_mel.json");
  EXPECT_TRUE(f.good()) << "tests/media/reference/gemma4a_mel.json is missing";
  return nlohmann::json::parse(f);
}

TEST(AudioMel, EqualsMtmdBitForBit) {
  const nlohmann::json ref = load_reference();
  auto mel = LogMel::create(gemma4a_log_mel_params(ref["n_mel"].get<int>()));
  ASSERT_TRUE(mel.ok()) << mel.error().message;
  ThreadPool pool(2);
  const char* names[] = {"tone", "noise31", "boundary", "short", "tiny"};
  ASSERT_EQ(ref["cases"].size(), std::size(names));
  for (const std::string name : names) {
    SCOPED_TRACE(name);
    const std::vector<int16_t> samples = name == "tone"       ? tone(32000)
                                         : name == "noise31"  ? noise(16000 * 31 + 8123)
                                         : name == "boundary" ? noise(480161)
                                         : name == "short"    ? noise(400)
                                                              : noise(100);
    const nlohmann::json& c = ref["cases"][name];
    const std::vector<uint8_t> bytes = wav(samples);
    ASSERT_EQ(sha256_hex(bytes.data(), bytes.size()), c["wav_sha256"].get<std::string>());
    auto media = decode_media(bytes, MediaLimits{});
    ASSERT_TRUE(media.ok()) << media.error().message;
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      auto got = mel->compute(media->audio.samples, p);
      ASSERT_TRUE(got.ok()) << got.error().message;
      ASSERT_EQ(got->size(), c["chunks"].size());
      for (size_t i = 0; i < got->size(); ++i) {
        const nlohmann::json& want = c["chunks"][i];
        const MelSpectrogram& m = (*got)[i];
        ASSERT_EQ(m.n_frames, want["n_len"].get<int>());
        ASSERT_EQ(m.n_mel, want["n_mel"].get<int>());
        const auto head = want["head"].get<std::vector<double>>();
        double max_diff = 0;
        for (size_t k = 0; k < head.size() && k < m.data.size(); ++k) {
          max_diff = std::max(max_diff, std::fabs(static_cast<double>(m.data[k]) - head[k]));
        }
        EXPECT_EQ(max_diff, 0.0) << "chunk " << i;
        EXPECT_EQ(sha256_hex(m.data.data(), m.data.size() * sizeof(float)), want["sha256"].get<std::string>())
            << "chunk " << i;
      }
    }
  }
}

// The scalar reference of one frame's spectrum: a double-precision DFT of the windowed frame,
// |X|, the filterbank, max(., floor), log.
TEST(AudioMel, FrameMatchesTheDefinitionInDoublePrecision) {
  auto mel = LogMel::create(gemma4a_log_mel_params(128));
  ASSERT_TRUE(mel.ok());
  const int n = 512, bins = 257;
  const std::vector<int16_t> s = noise(n);
  std::vector<float> frame(n);
  for (int i = 0; i < n; ++i)
    frame[static_cast<size_t>(i)] = mel->window()[static_cast<size_t>(i)] * (s[static_cast<size_t>(i)] / 32768.0f);
  std::vector<float> scratch(static_cast<size_t>(n) * 10), got(128);
  mel->frame(frame.data(), scratch.data(), got.data(), 1);
  std::vector<double> mag(bins);
  for (int k = 0; k < bins; ++k) {
    std::complex<double> x = 0;
    for (int t = 0; t < n; ++t) x += double(frame[static_cast<size_t>(t)]) * std::polar(1.0, -2 * M_PI * k * t / n);
    mag[static_cast<size_t>(k)] = std::abs(x);
  }
  for (int j = 0; j < 128; ++j) {
    double sum = 0;
    for (int k = 0; k < bins; ++k)
      sum += mag[static_cast<size_t>(k)] * mel->filters()[static_cast<size_t>(j) * bins + k];
    EXPECT_NEAR(got[static_cast<size_t>(j)], std::log(std::max(sum, 0.001)), 1e-4) << j;
  }
  // HTK filters: triangles peaking at most at 1. The lowest ones are narrower than one 31.25 Hz
  // bin and catch none (as in mtmd and Hugging Face's extractor: their rows are log(0.001)).
  int empty = 0;
  for (int j = 0; j < 128; ++j) {
    float peak = 0;
    for (int k = 0; k < bins; ++k) peak = std::max(peak, mel->filters()[static_cast<size_t>(j) * bins + k]);
    EXPECT_LE(peak, 1.0f) << j;
    if (peak == 0.0f) {
      ++empty;
      EXPECT_LT(j, 16) << "only low filters are narrower than a bin";
    }
  }
  EXPECT_LT(empty, 16);
}

TEST(AudioMel, FramesAndErrors) {
  auto mel = LogMel::create(gemma4a_log_mel_params(128));
  ASSERT_TRUE(mel.ok());
  EXPECT_EQ(mel->frames_for(1), 0);
  EXPECT_EQ(mel->frames_for(2), 1);
  EXPECT_EQ(mel->frames_for(160), 1);
  EXPECT_EQ(mel->frames_for(161), 1);
  EXPECT_EQ(mel->frames_for(320), 1);
  EXPECT_EQ(mel->frames_for(321), 2);
  EXPECT_EQ(mel->frames_for(480000), 2999);
  auto short_audio = mel->compute(std::vector<float>(1, 0.1f), nullptr);
  ASSERT_FALSE(short_audio.ok());
  EXPECT_NE(short_audio.error().message.find("1 sample(s), too few"), std::string::npos) << short_audio.error().message;
  EXPECT_FALSE(mel->compute({}, nullptr).ok());
  // A trailing chunk too short for a frame is an error too (mtmd would fail the whole item).
  auto tail = mel->compute(std::vector<float>(480000 + 1, 0.1f), nullptr);
  ASSERT_FALSE(tail.ok());
  EXPECT_NE(tail.error().message.find("at 30.00 s"), std::string::npos) << tail.error().message;

  LogMelParams p = gemma4a_log_mel_params(128);
  p.n_fft = 500;
  auto bad = LogMel::create(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("n_fft is 500"), std::string::npos);
  p = gemma4a_log_mel_params(0);
  EXPECT_FALSE(LogMel::create(p).ok());
  p = gemma4a_log_mel_params(128);
  p.window_len = 1024;
  EXPECT_FALSE(LogMel::create(p).ok());
}

}  // namespace
}  // namespace sniper
