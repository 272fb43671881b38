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
#include "kernels/ops.h"
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
    EXPECT_EQ(kv.bytes(),
              static_cast<size_t>(kLayers) * (lay.head_bytes * kHeads * kCtx + lay.vt_row_bytes * kHeads * kHd));
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
        EXPECT_EQ(0, std::memcmp((*other)->v_rows(l) + off, kv.v_rows(l) + off, sizeof(fp16_t) * n))
            << "V^T row " << row;
      }
    }
  }
}

std::vector<KvConfig> all_configs() {
  std::vector<KvConfig> out;
  const KvType types[] = {KvType::kF16,  KvType::kBF16,   KvType::kQ8_0, KvType::kQ4_0,
                          KvType::kQ4_1, KvType::kIQ4_NL, KvType::kQ5_0, KvType::kQ5_1};
  for (KvType t : types) {
    out.push_back(KvConfig(t, t, FlashAttn::kOn));  // rows, rotated when quantized
    KvConfig plain(t, t, FlashAttn::kOn);
    plain.rotate = false;
    out.push_back(plain);
    if (!kv_type_quantized(t)) out.push_back(KvConfig(t, t, FlashAttn::kOff));         // V transposed
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

namespace sniper {
namespace {

// Decodes head h of position q from a save_layer buffer of n positions into f32, un-rotated.
std::vector<float> saved_k_head(const KvCache& kv, const std::vector<uint8_t>& saved, int64_t q, int64_t h) {
  const AttentionLayout& lay = kv.layout();
  std::vector<float> out(kHd);
  dequantize_row_ref(lay.k_type, saved.data() + kv.position_bytes() * q + lay.head_bytes * h, out.data(), kHd);
  if (lay.k_rot > 0) hadamard_rotate(out.data(), kHd, lay.k_rot);
  return out;
}

// The V bytes of position q (every head, in save order) from a save_layer buffer of n positions.
std::vector<uint8_t> saved_v(const KvCache& kv, const std::vector<uint8_t>& saved, int64_t n, int64_t q) {
  const size_t v_state = kv.position_bytes() * n;
  if (!kv.layout().v_transposed) {
    const uint8_t* p = saved.data() + v_state + kv.v_position_bytes() * q;
    return std::vector<uint8_t>(p, p + kv.v_position_bytes());
  }
  std::vector<uint8_t> out;
  for (int64_t r = 0; r < kHeads * kHd; ++r) {
    const uint8_t* p = saved.data() + v_state + sizeof(fp16_t) * (r * n + q);
    out.insert(out.end(), p, p + sizeof(fp16_t));
  }
  return out;
}

double sq_err(const std::vector<float>& a, const float* b, double* den) {
  double num = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    *den += static_cast<double>(b[i]) * b[i];
  }
  return num;
}

// Context shift (KvCache::shift_head): keys stored roped at position p and shifted by -d decode
// to what storing them roped at p - d gives, within twice the type's own rounding (a moved key
// is converted twice, llama.cpp's K-shift); kept keys keep their bytes (f16, bf16) or, for a
// quantized K that llama.cpp dequantizes and quantizes again, their values within that
// rounding; V bytes move unchanged; both rope styles.
TEST_P(KvCacheTest, ShiftRotatesMovedKeysKeepsTheRestAndMovesValues) {
  const KvConfig config = GetParam();
  for (RopeStyle style : {RopeStyle::kNorm, RopeStyle::kNeox}) {
    auto made = KvCache::create(kLayers, kCtx, kHeads, kHd, config);
    ASSERT_TRUE(made.ok()) << made.error().message;
    KvCache& kv = **made;
    const int64_t n_past = 31, keep = 5, discard = 10, width = kHeads * kHd, half = kHd / 2;
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> raw(static_cast<size_t>(kLayers * n_past * width)), v(raw.size());
    for (float& x : raw) x = dist(rng);
    for (float& x : v) x = dist(rng);
    auto at = [&](int64_t l, int64_t p) { return static_cast<size_t>((l * n_past + p) * width); };
    // K of (layer, position p) roped at position `pos`.
    auto roped = [&](int64_t l, int64_t p, int64_t pos) {
      std::vector<float> cos(half), sin(half);
      rope_angles(pos, kHd, 10000.0f, 1.0f, nullptr, cos.data(), sin.data());
      std::vector<float> k(raw.begin() + at(l, p), raw.begin() + at(l, p) + width);
      rope_apply(k.data(), kHeads, kHd, kHd, style, cos.data(), sin.data());
      return k;
    };
    for (int64_t l = 0; l < kLayers; ++l) {
      for (int64_t p = 0; p < n_past; ++p) kv.store(l, p, roped(l, p, p).data(), v.data() + at(l, p));
    }
    std::vector<std::vector<uint8_t>> before(kLayers, std::vector<uint8_t>(kv.saved_bytes(n_past)));
    for (int64_t l = 0; l < kLayers; ++l) kv.save_layer(l, n_past, before[l].data());

    std::vector<float> cos(half), sin(half);
    rope_angles(-discard, kHd, 10000.0f, 1.0f, nullptr, cos.data(), sin.data());
    const KvShift shift{.n_keep = keep,
                        .n_discard = discard,
                        .n_past = n_past,
                        .n_rot = kHd,
                        .style = style,
                        .cos = cos.data(),
                        .sin = sin.data()};
    for (int64_t l = 0; l < kLayers; ++l) {
      for (int64_t h = 0; h < kHeads; ++h) kv.shift_head(l, h, shift);
    }
    const int64_t n_after = n_past - discard;
    // The same keys stored fresh at the new positions: the baseline rounding of the type.
    auto fresh_made = KvCache::create(kLayers, kCtx, kHeads, kHd, config);
    ASSERT_TRUE(fresh_made.ok());
    KvCache& fresh = **fresh_made;
    for (int64_t l = 0; l < kLayers; ++l) {
      for (int64_t q = keep; q < n_after; ++q)
        fresh.store(l, q, roped(l, q + discard, q).data(), v.data() + at(l, q + discard));
    }
    double shifted_num = 0, shifted_den = 0, fresh_num = 0, fresh_den = 0, kept_num = 0, kept_den = 0;
    double stale_num = 0, stale_den = 0;
    for (int64_t l = 0; l < kLayers; ++l) {
      std::vector<uint8_t> after(kv.saved_bytes(n_after)), fresh_saved(kv.saved_bytes(n_after));
      kv.save_layer(l, n_after, after.data());
      fresh.save_layer(l, n_after, fresh_saved.data());
      for (int64_t q = 0; q < n_after; ++q) {
        const int64_t src = q < keep ? q : q + discard;
        ASSERT_EQ(saved_v(kv, after, n_after, q), saved_v(kv, before[l], n_past, src)) << "V l " << l << " q " << q;
        for (int64_t h = 0; h < kHeads; ++h) {
          const std::vector<float> k = saved_k_head(kv, after, q, h);
          if (q < keep) {
            const std::vector<float> k0 = saved_k_head(kv, before[l], q, h);
            if (!kv_type_quantized(config.k)) {
              ASSERT_EQ(0, std::memcmp(after.data() + kv.position_bytes() * q + kv.layout().head_bytes * h,
                                       before[l].data() + kv.position_bytes() * q + kv.layout().head_bytes * h,
                                       kv.layout().head_bytes))
                  << "kept K l " << l << " q " << q;
            }
            kept_num += sq_err(k, k0.data(), &kept_den);
            continue;
          }
          const std::vector<float> exact = roped(l, src, q);
          shifted_num += sq_err(k, exact.data() + h * kHd, &shifted_den);
          fresh_num += sq_err(saved_k_head(fresh, fresh_saved, q, h), exact.data() + h * kHd, &fresh_den);
          stale_num += sq_err(k, roped(l, src, src).data() + h * kHd, &stale_den);
        }
      }
    }
    const double shifted = shifted_num / shifted_den, baseline = fresh_num / fresh_den;
    EXPECT_LE(shifted, 4.0 * baseline + 1e-12) << "style " << static_cast<int>(style);
    EXPECT_LE(kept_num / kept_den, baseline + 1e-12);
    // Not a copy: the moved keys really were rotated (the keys as they were are far off).
    EXPECT_GT(stale_num / stale_den, 10.0 * baseline + 1e-3);
  }
}

}  // namespace
}  // namespace sniper
