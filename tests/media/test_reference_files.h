// SPDX-License-Identifier: MIT
// What the media suites share to read mtmd's references (tests/media/reference, ../shared/reference/mm):
// a file's bytes, a raw little-endian f32 array, a SHA-256 in hex, the check that a prompt's
// pieces are mtmd's chunks (text ids, and each media chunk's position count), the audio
// references' signals and WAV, and a case's projector written again by synth.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/media_prompt.h"
#include "synth/synth_mmproj.h"

namespace sniper::test {

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline std::vector<float> read_f32(const std::string& path) {
  const std::vector<uint8_t> b = read_bytes(path);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

inline std::string sha256_hex(const void* data, size_t n) {
  unsigned char md[32];
  unsigned int len = 0;
  EVP_Digest(data, n, md, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s.push_back(kHex[md[i] >> 4]);
    s.push_back(kHex[md[i] & 15]);
  }
  return s;
}

// The audio references' test signals (scripts/mm/audio_signals.py: the tone and the noise) and
// the 16 kHz mono 16-bit WAV they are written as.
inline std::vector<int16_t> samples_of(const std::string& kind, int64_t n) {
  std::vector<int16_t> s(static_cast<size_t>(n));
  if (kind == "tone") {
    for (int64_t i = 0; i < n; ++i) {
      // Python's left-to-right order: 2 * pi * 440 * i / 16000.
      const auto x = static_cast<double>(i);
      s[static_cast<size_t>(i)] = static_cast<int16_t>(
          static_cast<int>(8000 * (std::sin(2 * M_PI * 440 * x / 16000) + 0.5 * std::sin(2 * M_PI * 880 * x / 16000))));
    }
    return s;
  }
  uint64_t state = 12345;
  for (int64_t i = 0; i < n; ++i) {
    state = (state * 1103515245 + 12345) % (uint64_t{1} << 31);
    const int64_t v = ((i * 37) % 400 - 200) * 40 + static_cast<int64_t>((state >> 16) % 8001) - 4000;
    s[static_cast<size_t>(i)] = static_cast<int16_t>(std::max<int64_t>(-32768, std::min<int64_t>(32767, v)));
  }
  return s;
}

inline std::vector<uint8_t> wav_of(const std::vector<int16_t>& s) {
  auto u32 = [](std::vector<uint8_t>& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  auto u16 = [](std::vector<uint8_t>& b, uint16_t v) {
    b.push_back(static_cast<uint8_t>(v));
    b.push_back(static_cast<uint8_t>(v >> 8));
  };
  const auto data = static_cast<uint32_t>(s.size() * 2);
  std::vector<uint8_t> b = {'R', 'I', 'F', 'F'};
  u32(b, 36 + data);
  for (char ch : std::string("WAVEfmt ")) b.push_back(static_cast<uint8_t>(ch));
  u32(b, 16);
  u16(b, 1);
  u16(b, 1);
  u32(b, 16000);
  u32(b, 32000);
  u16(b, 2);
  u16(b, 16);
  for (char ch : std::string("data")) b.push_back(static_cast<uint8_t>(ch));
  u32(b, data);
  for (int16_t v : s) u16(b, static_cast<uint16_t>(v));
  return b;
}

// `chunks` as the reference's meta.json lists them: {"type": 0, "ids": [...]} for text,
// {"n_pos": N} for media.
inline void expect_mtmd_chunks(const MediaPrompt& prompt, const ModelConfig& config, const nlohmann::json& chunks) {
  ASSERT_EQ(prompt.pieces.size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (chunks[i]["type"] == 0) {
      EXPECT_EQ(prompt.pieces[i].tokens, chunks[i]["ids"].get<std::vector<int32_t>>()) << "chunk " << i;
    } else {
      ASSERT_NE(prompt.pieces[i].media, nullptr);
      EXPECT_EQ(media_n_pos(config, *prompt.pieces[i].media), chunks[i]["n_pos"].get<int64_t>()) << "chunk " << i;
    }
  }
}

// A case's projector written again from its `synth` arguments (the flags of `sniper synth
// --mmproj`) for a language model of width lm_dim, checked against the reference's SHA-256: the
// file libmtmd read. Returns its path (a per-process temporary file).
inline std::string write_synth_projector(const nlohmann::json& meta, const std::string& name, int64_t lm_dim) {
  const std::vector<std::string> args = meta["synth"].get<std::vector<std::string>>();
  SynthMmprojSpec s;
  s.lm_dim = lm_dim;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& k = args[i];
    const std::string& v = args[i + 1];
    if (k == "--mmproj") s.projector = v;
    if (k == "--type") s.type = v;
    if (k == "--seed") s.seed = std::stoull(v);
    if (k == "--layers") s.n_layers = std::stoll(v);
    if (k == "--dim") s.n_embd = std::stoll(v);
    if (k == "--heads") s.n_heads = std::stoll(v);
    if (k == "--ff") s.n_ff = std::stoll(v);
    if (k == "--mmproj-act") s.act = v;
  }
  std::string path =
      (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".mmproj.gguf")).string();
  auto written = write_synth_mmproj(s, path);
  EXPECT_TRUE(written.ok()) << written.error().message;
  const std::vector<uint8_t> bytes = read_bytes(path);
  EXPECT_EQ(sha256_hex(bytes.data(), bytes.size()), meta["mmproj_sha256"].get<std::string>())
      << "synth --mmproj " << s.projector << " no longer writes the reference's projector";
  return path;
}

}  // namespace sniper::test
