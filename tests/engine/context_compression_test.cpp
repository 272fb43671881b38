// SPDX-License-Identifier: MIT
// Context compression's section codec against a direct computation: every value of a random K/V
// section (f16 with transposed V, and q8_0) comes back within the chosen block format's rounding
// bound, at the right position and head, into either cache type.
#include "engine/context_compression.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "quant/q8_0.h"

namespace sniper {
namespace {

bool transposed(const KvConfig& c) { return c.v == KvType::kF16 && !c.flash(); }
size_t rows_bytes(KvType t, size_t n) { return t == KvType::kQ8_0 ? n / 32 * sizeof(BlockQ8_0) : n * sizeof(fp16_t); }

void put_rows(const float* x, KvType t, size_t n, uint8_t* out) {
  if (t == KvType::kQ8_0) {
    quantize_act_q8_0_ref(x, reinterpret_cast<BlockQ8_0*>(out), static_cast<int64_t>(n));
    return;
  }
  auto* h = reinterpret_cast<fp16_t*>(out);
  for (size_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(x[i]);
}

float get_row_value(const uint8_t* s, KvType t, size_t at) {
  if (t == KvType::kQ8_0) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(s);
    return fp16_to_fp32(b[at / 32].d) * b[at / 32].qs[at % 32];
  }
  return fp16_to_fp32(reinterpret_cast<const fp16_t*>(s)[at]);
}

// A section of m positions in the saved layout of `type`, from f32 rows k, v [m][kv_dim]:
// K rows, then V rows or (f16 without flash attention) V transposed [kv_dim][m].
std::vector<uint8_t> make_section(const std::vector<float>& k, const std::vector<float>& v, int64_t m, int64_t kv_dim,
                                  const KvConfig& type) {
  std::vector<uint8_t> out(static_cast<size_t>(m) * kv_position_bytes(1, kv_dim, type));
  const size_t n = static_cast<size_t>(m * kv_dim);
  put_rows(k.data(), type.k, n, out.data());
  uint8_t* vo = out.data() + rows_bytes(type.k, n);
  if (!transposed(type)) {
    put_rows(v.data(), type.v, n, vo);
    return out;
  }
  auto* h = reinterpret_cast<fp16_t*>(vo);
  for (int64_t r = 0; r < kv_dim; ++r) {
    for (int64_t p = 0; p < m; ++p)
      h[static_cast<size_t>(r * m + p)] = fp32_to_fp16(v[static_cast<size_t>(p * kv_dim + r)]);
  }
  return out;
}

// Reads value (p, i) of K (which = 0) or V (1) from a section of `type`.
float read(const std::vector<uint8_t>& s, const KvConfig& type, int64_t m, int64_t kv_dim, int which, int64_t p,
           int64_t i) {
  const size_t n = static_cast<size_t>(m * kv_dim);
  const size_t row_at = static_cast<size_t>(p * kv_dim + i);
  if (which == 0) return get_row_value(s.data(), type.k, row_at);
  const uint8_t* vs = s.data() + rows_bytes(type.k, n);
  return get_row_value(vs, type.v, transposed(type) ? static_cast<size_t>(i * m + p) : row_at);
}

std::string name(const KvConfig& c) { return kv_config_name(c); }

TEST(ContextCompression, SectionRoundTripWithinTheBlockBound) {
  std::mt19937 rng(7);
  for (const auto& [m, heads, head_dim] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 1, 32}, {37, 2, 64}, {130, 4, 128}}) {
    const int64_t kv_dim = heads * head_dim;
    std::normal_distribution<float> dist(0.f, 1.f);
    std::vector<float> k(static_cast<size_t>(m * kv_dim)), v(k.size());
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = dist(rng) * (i % 97 == 0 ? 20.f : 1.f);  // outliers set some blocks' scale
      v[i] = dist(rng);
    }
    // f16 (V transposed), q8_0 (flash attention, V rows), f16 with flash attention (V rows) and
    // q8_0 K with a transposed f16 V.
    const KvConfig configs[] = {KvConfig(KvType::kF16), KvConfig(KvType::kQ8_0),
                                KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOn),
                                KvConfig(KvType::kQ8_0, KvType::kF16, FlashAttn::kOff)};
    for (const KvConfig& from : configs) {
      const std::vector<uint8_t> section = make_section(k, v, m, kv_dim, from);
      for (ContextCompression c : {ContextCompression::kQ8_0, ContextCompression::kQ4_0}) {
        std::vector<uint8_t> packed(static_cast<size_t>(m) * compressed_kv_position_bytes(heads, head_dim, c), 0xAB);
        compress_kv_section(section.data(), from, m, heads, head_dim, c, packed.data());
        for (const KvConfig& to : configs) {
          std::vector<uint8_t> back(static_cast<size_t>(m) * kv_position_bytes(heads, head_dim, to), 0xCD);
          decompress_kv_section(packed.data(), c, m, heads, head_dim, to, back.data());
          // Per 32-value block (one head's slice of one position): |error| <= half a step for
          // q8_0 (step amax/127), a whole step for q4_0 (step amax/8; levels -8..7 of the step
          // signed so the block's extreme is -8, so a value of the other sign as large clamps
          // to 7), plus the target type's own rounding (q8_0 amax/254, f16 relative 2^-11).
          for (int which = 0; which < 2; ++which) {
            for (int64_t p = 0; p < m; ++p) {
              for (int64_t b0 = 0; b0 < kv_dim; b0 += 32) {
                float amax = 0;
                for (int64_t i = b0; i < b0 + 32; ++i)
                  amax = std::max(amax, std::fabs(read(section, from, m, kv_dim, which, p, i)));
                const float err = c == ContextCompression::kQ8_0 ? amax / 127.f * 0.51f : amax / 8.f * 1.01f;
                const KvType to_type = which ? to.v : to.k;
                const float bound = err + amax * (to_type == KvType::kQ8_0 ? 1.f / 254 : 1.f / 1024) * 1.01f + 1e-6f;
                for (int64_t i = b0; i < b0 + 32; ++i) {
                  const float want = read(section, from, m, kv_dim, which, p, i);
                  const float got = read(back, to, m, kv_dim, which, p, i);
                  ASSERT_LE(std::fabs(got - want), bound)
                      << "m " << m << " heads " << heads << " from " << name(from) << " via "
                      << context_compression_name(c) << " to " << name(to) << (which ? " V" : " K") << " p " << p
                      << " i " << i;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(ContextCompression, SizesAndNames) {
  EXPECT_EQ(compressed_kv_position_bytes(8, 128, ContextCompression::kQ8_0), 2u * 8 * 4 * 34);
  EXPECT_EQ(compressed_kv_position_bytes(8, 128, ContextCompression::kQ4_0), 2u * 8 * 4 * 18);
  EXPECT_EQ(kv_position_bytes(8, 128, KvType::kF16), 2u * 8 * 128 * 2);
  EXPECT_EQ(kv_position_bytes(8, 128, KvType::kQ8_0), 2u * 8 * 4 * 34);
  for (ContextCompression c : {ContextCompression::kNone, ContextCompression::kQ8_0, ContextCompression::kQ4_0}) {
    auto back = parse_context_compression(context_compression_name(c));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, c);
  }
  auto bad = parse_context_compression("f16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'f16'"), std::string::npos);
}

}  // namespace
}  // namespace sniper
