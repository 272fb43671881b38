// SPDX-License-Identifier: MIT
// Validates the codecs against tensors quantized by llama.cpp itself: the syn-* models in
// $SNIPER_SHARED_DIR/models were produced by llama-quantize (no importance matrix) from F32
// masters that are also there. For every quantized tensor we
//   1. decode it and compare with the master tensor of the same name (relative RMSE bound per
//      type): this checks our decoders against llama.cpp's encoders;
//   2. re-encode the master with our quantize_row_ref and compare bytes with the file: without
//      an importance matrix llama-quantize calls ggml's quantize_row_*_ref, so our encoders
//      must reproduce its blocks byte for byte (measured: 0 differing blocks for every type).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "quant/quant.h"
#include "quant/quant_test_util.h"

namespace sniper {
namespace {

std::string shared_dir() {
  const char* dir = std::getenv("SNIPER_SHARED_DIR");
  return dir != nullptr ? dir : "";
}

std::vector<uint8_t> read_bytes(const GgufFile& f, const GgufTensorInfo& t) {
  std::ifstream in(f.path, std::ios::binary);
  std::vector<uint8_t> bytes(t.nbytes);
  in.seekg(static_cast<std::streamoff>(t.file_offset));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(in.good()) << "short read of " << t.name << " from " << f.path;
  return bytes;
}

std::vector<float> read_f32(const GgufFile& f, const GgufTensorInfo& t) {
  EXPECT_EQ(t.type, GgmlType::kF32) << t.name;
  const std::vector<uint8_t> bytes = read_bytes(f, t);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Upper bounds on decoded-vs-master relative RMSE (master weights are N(0, 0.02) draws), ~15%
// above the measured worst over all files: f16 2.1e-4, bf16 1.7e-3, q8_0 5.4e-3, q6_K .018,
// q5_K .036, q4_K .072, q4_0 .086, q3_K .152, q2_K .299 (close to the optimal scalar
// quantizers' .34/.19/.097 for 2/3/4 bits on Gaussian data).
const std::map<GgmlType, double> kMaxRelRmse = {
    {GgmlType::kF16, 2.4e-4}, {GgmlType::kBF16, 1.9e-3}, {GgmlType::kQ8_0, 6.2e-3},
    {GgmlType::kQ6_K, 0.021}, {GgmlType::kQ5_K, 0.042},  {GgmlType::kQ4_K, 0.083},
    {GgmlType::kQ4_0, 0.099}, {GgmlType::kQ3_K, 0.175},  {GgmlType::kQ2_K, 0.34},
};

// Re-encoding is compared on the first kMaxRowsReencoded rows of each tensor (keeps the test
// fast under sanitizers; that is still thousands of blocks per type).
constexpr int64_t kMaxRowsReencoded = 128;

struct Pair {
  const char* quantized;
  const char* master;
};

constexpr Pair kPairs[] = {
    {"syn-llama-F16.gguf", "syn-llama.gguf"},    {"syn-llama-BF16.gguf", "syn-llama.gguf"},
    {"syn-llama-Q8_0.gguf", "syn-llama.gguf"},   {"syn-llama-Q6_K.gguf", "syn-llama.gguf"},
    {"syn-llama-Q5_K_M.gguf", "syn-llama.gguf"}, {"syn-llama-Q4_K_M.gguf", "syn-llama.gguf"},
    {"syn-llama-Q4_0.gguf", "syn-llama.gguf"},   {"syn-llama-Q3_K_M.gguf", "syn-llama.gguf"},
    {"syn-llama-Q2_K.gguf", "syn-llama.gguf"},   {"syn-qwen3-Q4_K_M.gguf", "syn-qwen3.gguf"},
    {"syn-qwen2-Q8_0.gguf", "syn-qwen2.gguf"},
};

TEST(LlamaCppTensors, DecodeMatchesMasterAndEncodeReproducesFile) {
  if (shared_dir().empty()) GTEST_SKIP() << "SNIPER_SHARED_DIR is not set";
  std::map<GgmlType, double> worst_rmse;
  std::map<GgmlType, std::pair<size_t, size_t>> blocks;  // type -> (mismatched, total)
  for (const Pair& p : kPairs) {
    auto q = gguf_open(shared_dir() + "/models/" + p.quantized);
    ASSERT_TRUE(q.ok()) << q.error().message;
    auto m = gguf_open(shared_dir() + "/models/" + p.master);
    ASSERT_TRUE(m.ok()) << m.error().message;
    for (const GgufTensorInfo& t : q->tensors()) {
      if (t.type == GgmlType::kF32) continue;
      const GgufTensorInfo* mt = m->find_tensor(t.name);
      ASSERT_NE(mt, nullptr) << t.name << " missing from " << p.master;
      ASSERT_EQ(mt->n_elements(), t.n_elements()) << t.name;
      ASSERT_TRUE(kMaxRelRmse.count(t.type)) << "unexpected type " << get_type_info(t.type).name;
      const int64_t n = t.n_elements();
      const std::vector<uint8_t> data = read_bytes(*q, t);
      ASSERT_EQ(data.size(), row_bytes(t.type, n)) << t.name;
      const std::vector<float> master = read_f32(*m, *mt);

      std::vector<float> decoded(static_cast<size_t>(n));
      dequantize_row_ref(t.type, data.data(), decoded.data(), n);
      const double rmse = testing::rel_rmse(decoded.data(), master.data(), decoded.size());
      EXPECT_LE(rmse, kMaxRelRmse.at(t.type)) << p.quantized << " " << t.name;
      worst_rmse[t.type] = std::max(worst_rmse[t.type], rmse);

      const int64_t n_encode = std::min(n, t.ne[0] * kMaxRowsReencoded);
      std::vector<uint8_t> ours(row_bytes(t.type, n_encode));
      quantize_row_ref(t.type, master.data(), ours.data(), n_encode);
      const size_t block_bytes = get_type_info(t.type).type_size;
      auto& [bad, total] = blocks[t.type];
      for (size_t off = 0; off < ours.size(); off += block_bytes) {
        ++total;
        if (std::memcmp(ours.data() + off, data.data() + off, block_bytes) != 0) ++bad;
      }
    }
  }
  for (const auto& [type, worst] : worst_rmse) {
    const auto [bad, total] = blocks[type];
    std::printf("%-5s worst rel_rmse vs master %.4g; re-encoded blocks differing %zu / %zu\n", get_type_info(type).name,
                worst, bad, total);
    EXPECT_EQ(bad, 0u) << get_type_info(type).name;
    EXPECT_GT(total, 500u) << get_type_info(type).name;
  }
  // Every type the files contain was seen.
  EXPECT_EQ(worst_rmse.size(), kMaxRelRmse.size());
}

}  // namespace
}  // namespace sniper
