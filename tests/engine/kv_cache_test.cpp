// SPDX-License-Identifier: MIT
// KvCache (kv/kv_cache.h): values land where its AttentionLayout says (each kv head's positions
// contiguous, V transposed without flash attention, in rows with it), in each type's from_float
// bytes (Hadamard-rotated first for quantized K / V unless rotation is off), saved layers come
// out in the layout-independent order of saved contexts, and load_layer is save_layer's exact
// inverse, for every K / V type. Bad shapes and configs are errors naming the flag.
#include "kv/kv_cache.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/hadamard.h"
#include "quant/quant.h"

namespace sniper {
namespace {

constexpr int64_t kLayers = 2, kCtx = 40, kHeads = 3, kHd = 64;

// The bytes the cache type gives one head's slice of values, rotated in chunks of `rot` first.
std::vector<uint8_t> encode(KvType type, const float* x, int64_t rot) {
  std::vector<float> r(x, x + kHd);
  if (rot > 0) hadamard_rotate(r.data(), kHd, rot);
  std::vector<uint8_t> out(row_bytes(kv_ggml_type(type), kHd));
  quantize_row_ref(kv_ggml_type(type), r.data(), out.data(), kHd);
  return out;
}

class KvCacheTest : public ::testing::TestWithParam<KvConfig> {};

TEST_P(KvCacheTest, LayoutSaveAndLoad) {
  const KvConfig config = GetParam();
  auto made = KvCache::create(kLayers, kCtx, kHeads, kHd, config);
  ASSERT_TRUE(made.ok()) << made.error().message;
  KvCache& kv = **made;
  const AttentionLayout& lay = kv.layout();
  ASSERT_EQ(lay.row_bytes, lay.head_bytes);  // a head's positions are contiguous
  ASSERT_EQ(lay.head_stride, lay.head_bytes * kCtx);
  ASSERT_EQ(kv.position_bytes(), lay.head_bytes * kHeads);
  EXPECT_EQ(lay.v_transposed, !config.flash());
  EXPECT_EQ(lay.k_rot, config.rotate && kv_type_quantized(config.k) ? 64 : 0);
  EXPECT_EQ(lay.v_rot, config.rotate && kv_type_quantized(config.v) ? 64 : 0);
  if (lay.v_transposed) {
    // V^T rows are whole 64-byte lines (kCtx = 40 positions -> 64), and the cache's size counts them.
    EXPECT_EQ(lay.vt_row_bytes, sizeof(fp16_t) * 64);
    EXPECT_EQ(kv.bytes(), static_cast<size_t>(kLayers) * (lay.head_bytes * kHeads * kCtx + lay.vt_row_bytes * kHeads * kHd));
  }
  if (!lay.v_transposed) {
    EXPECT_EQ(kv.bytes(), static_cast<size_t>(kLayers) * (lay.head_bytes + lay.v_head_bytes) * kHeads * kCtx);
  }
  EXPECT_EQ(kv.bytes(), KvCache::bytes_for(kLayers, kCtx, kHeads, kHd, config));

  const int64_t n = 29, width = kHeads * kHd;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(kLayers * n * width)), v(k.size());
  for (float& x : k) x = dist(rng);
  for (float& x : v) x = dist(rng);
  auto at = [&](int64_t l, int64_t p) { return static_cast<size_t>((l * n + p) * width); };
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t p = 0; p < n; ++p) kv.store(l, p, k.data() + at(l, p), v.data() + at(l, p));
  }

  const size_t pb = kv.position_bytes(), vpb = kv.v_position_bytes();
  std::vector<uint8_t> saved(kv.saved_bytes(n));
  ASSERT_EQ(saved.size(), (pb + vpb) * n);
  for (int64_t l = 0; l < kLayers; ++l) {
    kv.save_layer(l, n, saved.data());
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t h = 0; h < kHeads; ++h) {
        const std::vector<uint8_t> ke = encode(config.k, k.data() + at(l, p) + h * kHd, lay.k_rot);
        const size_t in_cache = lay.head_stride * h + lay.row_bytes * p;
        ASSERT_EQ(0, std::memcmp(kv.k_rows(l) + in_cache, ke.data(), ke.size())) << "K l " << l << " p " << p;
        ASSERT_EQ(0, std::memcmp(saved.data() + pb * p + lay.head_bytes * h, ke.data(), ke.size()));
        const float* vs = v.data() + at(l, p) + h * kHd;
        if (!lay.v_transposed) {
          const std::vector<uint8_t> ve = encode(config.v, vs, lay.v_rot);
          const size_t v_in_cache = lay.v_head_stride * h + lay.v_row_bytes * p;
          ASSERT_EQ(0, std::memcmp(kv.v_rows(l) + v_in_cache, ve.data(), ve.size())) << "V l " << l << " p " << p;
          ASSERT_EQ(0, std::memcmp(saved.data() + pb * n + vpb * p + lay.v_head_bytes * h, ve.data(), ve.size()));
        } else {
          for (int64_t d = 0; d < kHd; ++d) {
            const uint16_t want = config.v == KvType::kBF16 ? fp32_to_bf16(vs[d]) : fp32_to_fp16(vs[d]);
            const int64_t row = h * kHd + d;
            fp16_t got, got_saved;
            std::memcpy(&got, kv.v_rows(l) + lay.vt_row_bytes * row + sizeof(fp16_t) * p, sizeof(fp16_t));
            std::memcpy(&got_saved, saved.data() + pb * n + sizeof(fp16_t) * (row * n + p), sizeof(fp16_t));
            ASSERT_EQ(got, want);
            ASSERT_EQ(got_saved, want);
          }
        }
      }
    }
    // A fresh cache loaded from the saved bytes saves the same bytes and holds the same rows.
    auto other = KvCache::create(kLayers, kCtx, kHeads, kHd, config);
    ASSERT_TRUE(other.ok());
    (*other)->load_layer(l, n, saved.data());
    std::vector<uint8_t> again(saved.size());
    (*other)->save_layer(l, n, again.data());
    EXPECT_EQ(saved, again);
    for (int64_t h = 0; h < kHeads; ++h) {
      const size_t off = lay.head_stride * h;
      EXPECT_EQ(0, std::memcmp((*other)->k_rows(l) + off, kv.k_rows(l) + off, lay.row_bytes * n));
    }
    if (!lay.v_transposed) {
      for (int64_t h = 0; h < kHeads; ++h) {
        const size_t off = lay.v_head_stride * h;
        EXPECT_EQ(0, std::memcmp((*other)->v_rows(l) + off, kv.v_rows(l) + off, lay.v_row_bytes * n));
      }
    } else {
      for (int64_t row = 0; row < kHeads * kHd; ++row) {
        const size_t off = lay.vt_row_bytes * row;
        EXPECT_EQ(0, std::memcmp((*other)->v_rows(l) + off, kv.v_rows(l) + off, sizeof(fp16_t) * n)) << "V^T row " << row;
      }
    }
  }
}

std::vector<KvConfig> all_configs() {
  std::vector<KvConfig> out;
  const KvType types[] = {KvType::kF16, KvType::kBF16, KvType::kQ8_0, KvType::kQ4_0,
                          KvType::kQ4_1, KvType::kIQ4_NL, KvType::kQ5_0, KvType::kQ5_1};
  for (KvType t : types) {
    out.push_back(KvConfig(t, t, FlashAttn::kOn));  // rows, rotated when quantized
    KvConfig plain(t, t, FlashAttn::kOn);
    plain.rotate = false;
    out.push_back(plain);
    if (!kv_type_quantized(t)) out.push_back(KvConfig(t, t, FlashAttn::kOff));  // V transposed
    if (t != KvType::kF16) out.push_back(KvConfig(t, KvType::kF16, FlashAttn::kOff));  // any K, f16 V^T
  }
  out.push_back(KvConfig(KvType::kQ8_0, KvType::kBF16, FlashAttn::kOff));
  out.push_back(KvConfig(KvType::kF16, KvType::kQ4_1, FlashAttn::kAuto));
  return out;
}

std::string config_name(const KvConfig& c) {
  std::string s = std::string(kv_type_name(c.k)) + "_" + kv_type_name(c.v) + (c.flash() ? "_fa" : "_nofa");
  if (!c.rotate) s += "_norot";
  return s;
}

INSTANTIATE_TEST_SUITE_P(Types, KvCacheTest, ::testing::ValuesIn(all_configs()),
                         [](const auto& info) { return config_name(info.param); });

TEST(KvCache, BadShapesAreErrors) {
  auto bad_ctx = KvCache::create(1, 0, 2, 64, KvType::kF16);
  ASSERT_FALSE(bad_ctx.ok());
  EXPECT_NE(bad_ctx.error().message.find("context"), std::string::npos);
  auto bad_hd = KvCache::create(1, 8, 2, 48, KvType::kQ8_0);
  ASSERT_FALSE(bad_hd.ok());
  EXPECT_NE(bad_hd.error().message.find("block size 32, which does not divide head_dim 48"), std::string::npos)
      << bad_hd.error().message;
  auto bad_v = KvCache::create(1, 8, 2, 48, KvConfig(KvType::kF16, KvType::kQ4_0, FlashAttn::kOn));
  ASSERT_FALSE(bad_v.ok());
  EXPECT_NE(bad_v.error().message.find("V cache type q4_0"), std::string::npos) << bad_v.error().message;
  // A quantized V without flash attention is refused, as llama.cpp refuses it.
  auto no_fa = KvCache::create(1, 8, 2, 64, KvConfig(KvType::kF16, KvType::kQ8_0, FlashAttn::kOff));
  ASSERT_FALSE(no_fa.ok());
  EXPECT_NE(no_fa.error().message.find("needs flash attention"), std::string::npos) << no_fa.error().message;
}

TEST(KvCache, ConfigParsingAndResolution) {
  for (const char* name : {"f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"}) {
    auto t = parse_kv_type(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_STREQ(kv_type_name(*t), name);
  }
  auto bad = parse_kv_type("q4_k");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("'q4_k'"), std::string::npos);
  EXPECT_FALSE(parse_flash_attn("maybe").ok());
  // auto: flash attention exactly when V is quantized (f16 stays today's bit-exact path).
  EXPECT_FALSE(KvConfig(KvType::kF16).flash());
  EXPECT_FALSE(KvConfig(KvType::kQ8_0, KvType::kF16, FlashAttn::kAuto).flash());
  EXPECT_TRUE(KvConfig(KvType::kF16, KvType::kQ4_0, FlashAttn::kAuto).flash());
  EXPECT_TRUE(KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOn).flash());
  // Rotation sizes: the largest power of two >= 64 dividing head_dim for K, 64 for V.
  EXPECT_EQ(hadamard_k_chunk(128), 128);
  EXPECT_EQ(hadamard_k_chunk(192), 64);
  EXPECT_EQ(hadamard_k_chunk(96), 0);
  EXPECT_EQ(hadamard_v_chunk(256), 64);
}

TEST(KvCache, HadamardIsOrthonormalAndMatchesTheMatrix) {
  // hadamard_rotate equals x * H (H[i][j] = (-1)^popcount(i&j) / sqrt(n)) up to rounding, and
  // rotating twice gives x back.
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t n : {2, 64, 128}) {
    std::vector<float> x(static_cast<size_t>(2 * n));
    for (float& v : x) v = dist(rng);
    std::vector<float> y = x;
    hadamard_rotate(y.data(), 2 * n, n);
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t i = 0; i < n; ++i) {
          want += (__builtin_popcountll(static_cast<unsigned long long>(i & j)) % 2 ? -1.0 : 1.0) * x[c * n + i];
        }
        want /= std::sqrt(static_cast<double>(n));
        EXPECT_NEAR(y[c * n + j], want, 1e-5) << "n " << n << " j " << j;
      }
    }
    hadamard_rotate(y.data(), 2 * n, n);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 1e-5);
  }
}

}  // namespace
}  // namespace sniper
