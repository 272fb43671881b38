// SPDX-License-Identifier: MIT
// Attention over every K / V cache type (kernels/flash_attention.h with flash attention, the
// converted-K path of kernels/attention.h without it), with the caches written by
// kv/kv_cache.h (rotation included): every tier and every group size gives the bits of the
// scalar ref tier run one head at a time, and the result is close to a plain double-precision
// attention over the unquantized K and V (the bound scales with the type's precision). The
// accumulator steps (RowOps mad/scale, f32 and f16) match their scalar twins bit for bit, tails
// included.
#include "kernels/flash_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/attention.h"
#include "kernels/kernel_test_util.h"
#include "kernels/ops.h"
#include "kv/kv_cache.h"

namespace sniper {
namespace {

using test::host_has;
using test::kAllTiers;
using test::nan_f;

struct Scratch {
  explicit Scratch(size_t bytes) : buf(bytes + 64) {}
  uint8_t* get() { return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63}); }
  std::vector<uint8_t> buf;
};

struct Filled {
  std::unique_ptr<KvCache> cache;
  std::vector<float> k, v;  // [pos][kv_head][d] what was stored
};

Filled fill(const KvConfig& config, int64_t n_kv_heads, int64_t hd, int64_t n_ctx, uint32_t seed) {
  Filled f;
  auto made = KvCache::create(1, n_ctx, n_kv_heads, hd, config);
  EXPECT_TRUE(made.ok()) << made.error().message;
  f.cache = std::move(made).value();
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t width = static_cast<size_t>(n_kv_heads * hd);
  f.k.resize(width * static_cast<size_t>(n_ctx));
  f.v.resize(f.k.size());
  for (float& x : f.k) x = dist(rng);
  for (float& x : f.v) x = dist(rng);
  for (int64_t p = 0; p < n_ctx; ++p) f.cache->store(0, p, f.k.data() + width * p, f.v.data() + width * p);
  return f;
}

std::vector<float> run(const Filled& f, const std::vector<float>& q, int64_t kv_head, int64_t group, int64_t pos0,
                       int64_t n_tok, int64_t n_kv, float scale, IsaTier tier, int64_t n_threads = 1) {
  const AttentionLayout& lay = f.cache->layout();
  const AttentionBatch batch = attention_batch(lay, pos0, n_tok, n_threads);
  std::vector<float> out(static_cast<size_t>(group * lay.head_dim), nan_f());
  Scratch s(attention_scratch_bytes(lay, batch.n_kv_padded, group));
  attend_group(lay, batch, q.data(), f.cache->k_rows(0), f.cache->v_rows(0), kv_head, group, n_kv, scale, out.data(),
               s.get(), tier);
  return out;
}

// softmax(scale * q.K) . V in double over the values as given (before any quantization).
std::vector<double> naive(const Filled& f, const float* q, int64_t kv_head, int64_t n_kv, float scale) {
  const int64_t hd = f.cache->head_dim(), width = f.cache->n_kv_heads() * hd;
  std::vector<double> s(static_cast<size_t>(n_kv)), out(static_cast<size_t>(hd), 0.0);
  double max = -INFINITY;
  for (int64_t j = 0; j < n_kv; ++j) {
    double d = 0;
    for (int64_t i = 0; i < hd; ++i)
      d += static_cast<double>(q[i]) * f.k[static_cast<size_t>(j * width + kv_head * hd + i)];
    s[static_cast<size_t>(j)] = scale * d;
    max = std::max(max, s[static_cast<size_t>(j)]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - max));
  for (int64_t j = 0; j < n_kv; ++j) {
    for (int64_t i = 0; i < hd; ++i) {
      out[static_cast<size_t>(i)] +=
          s[static_cast<size_t>(j)] / sum * f.v[static_cast<size_t>(j * width + kv_head * hd + i)];
    }
  }
  return out;
}

// Relative RMS error allowed against the unquantized attention: about the types' precision.
double bound_for(const KvConfig& c) {
  const auto err = [](KvType t) {
    switch (t) {
      case KvType::kF16: return 0.01;
      case KvType::kBF16: return 0.04;
      case KvType::kQ8_0: return 0.03;
      case KvType::kQ5_0:
      case KvType::kQ5_1: return 0.12;
      default: return 0.25;  // 4-bit
    }
  };
  return err(c.k) + err(c.v);
}

void check(const KvConfig& config, int64_t hd, int64_t n_kv_heads, int64_t group, int64_t n_ctx,
           std::initializer_list<int64_t> positions, std::initializer_list<int64_t> n_toks, int64_t n_threads = 1) {
  SCOPED_TRACE(kv_config_name(config) + " hd " + std::to_string(hd) + " group " + std::to_string(group));
  const Filled f = fill(config, n_kv_heads, hd, n_ctx, 17);
  ASSERT_NE(f.cache, nullptr);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::mt19937 rng(23);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  for (int64_t n_tok : n_toks) {
    for (int64_t pos : positions) {
      const int64_t pos0 = std::max<int64_t>(0, pos - n_tok + 1), n_kv = pos + 1;
      for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
        std::vector<float> q(static_cast<size_t>(group * hd));
        for (float& x : q) x = dist(rng);
        std::vector<float> want;
        for (int64_t g = 0; g < group; ++g) {
          const std::vector<float> qg(q.begin() + g * hd, q.begin() + (g + 1) * hd);
          const std::vector<float> o = run(f, qg, kvh, 1, pos0, n_tok, n_kv, scale, IsaTier::kRef, n_threads);
          want.insert(want.end(), o.begin(), o.end());
          const std::vector<double> plain = naive(f, qg.data(), kvh, n_kv, scale);
          double num = 0, den = 0;
          for (int64_t d = 0; d < hd; ++d) {
            const double e = o[static_cast<size_t>(d)] - plain[static_cast<size_t>(d)];
            num += e * e;
            den += plain[static_cast<size_t>(d)] * plain[static_cast<size_t>(d)];
          }
          ASSERT_LE(std::sqrt(num / den), bound_for(config)) << "n_kv " << n_kv << " head " << g;
        }
        for (IsaTier tier : kAllTiers) {
          if (!host_has(tier)) continue;
          const std::vector<float> got = run(f, q, kvh, group, pos0, n_tok, n_kv, scale, tier, n_threads);
          ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * want.size()))
              << "tier " << isa_tier_name(tier) << " n_kv " << n_kv << " n_tok " << n_tok << " kv head " << kvh;
        }
      }
    }
  }
}

constexpr KvType kAllTypes[] = {KvType::kF16,  KvType::kBF16,   KvType::kQ8_0, KvType::kQ4_0,
                                KvType::kQ4_1, KvType::kIQ4_NL, KvType::kQ5_0, KvType::kQ5_1};

TEST(FlashAttention, EveryTypeMatchesRefPerHeadAndPlainAttention) {
  for (KvType t : kAllTypes) {
    // Rotated (head_dim 128: K in one 128 chunk, V in two 64 chunks), across the 64-cell tiles.
    check(KvConfig(t, t, FlashAttn::kOn), 128, 2, 4, 200, {0, 1, 63, 64, 130, 199}, {1, 3});
    // head_dim 96: no rotation (96 % 64 != 0), an odd number of 32-element blocks.
    check(KvConfig(t, t, FlashAttn::kOn), 96, 1, 3, 80, {0, 79}, {1});
  }
}

TEST(FlashAttention, F16TiledAndSplitKv) {
  const KvConfig f16_fa(KvType::kF16, KvType::kF16, FlashAttn::kOn);
  // Calls of >= 64 tokens: the tiled f32 kernel (tiles of 64 cells, the last one partial).
  check(f16_fa, 64, 2, 4, 300, {63, 64, 100, 299}, {64, 100});
  check(f16_fa, 128, 1, 3, 200, {150}, {70});
  // Decode over >= 512 padded cells: split-KV over 1, 2 and 3 threads (chunks past the query's
  // position hold masked cells only); below 512 the per-row loop.
  for (int64_t threads : {1, 2, 3}) check(f16_fa, 64, 2, 4, 700, {255, 256, 300, 511, 512, 699}, {1}, threads);
  // head_dim 80 (not a multiple of 16): never tiled.
  check(f16_fa, 80, 1, 2, 150, {100}, {64});
}

// attend_tokens: a tile of tokens whose rows share each K/V tile gives, on every tier, the bits
// of one attend_group call per token at the ref tier (the causal mask per row: the tile's first
// tokens see fewer cells, some of them none of a later K tile). Other paths loop attend_group.
void check_tokens(const KvConfig& config, int64_t hd, int64_t group, int64_t n_ctx, int64_t pos0, int64_t n_tok_call) {
  SCOPED_TRACE(kv_config_name(config) + " hd " + std::to_string(hd) + " group " + std::to_string(group) + " pos0 " +
               std::to_string(pos0));
  const int64_t n_kv_heads = 2;
  const Filled f = fill(config, n_kv_heads, hd, n_ctx, 31);
  ASSERT_NE(f.cache, nullptr);
  const AttentionLayout& lay = f.cache->layout();
  const AttentionBatch batch = attention_batch(lay, pos0, n_tok_call, 2);
  const int64_t tile = attention_token_tile(lay, batch, group);
  // Flash attention shares K/V tiles among the tokens of a call: 64 query rows per tile, on the
  // f32 tiled path (f16 K and V, >= 64 tokens) and on the per-row path alike; without flash
  // attention each token runs alone.
  EXPECT_EQ(tile, config.flash() && n_tok_call >= 2 ? std::max<int64_t>(1, 64 / group) : 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t q_dim = n_kv_heads * group * hd;
  std::mt19937 rng(41);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  std::vector<float> q(static_cast<size_t>(n_tok_call * q_dim));
  for (float& x : q) x = dist(rng);
  // Want: one attend_group per (token, kv head) at the ref tier.
  std::vector<float> want(q.size(), nan_f());
  Scratch one(attention_scratch_bytes(lay, batch.n_kv_padded, group));
  for (int64_t t = 0; t < n_tok_call; ++t) {
    for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
      const int64_t off = t * q_dim + kvh * group * hd;
      attend_group(lay, batch, q.data() + off, f.cache->k_rows(0), f.cache->v_rows(0), kvh, group, pos0 + t + 1, scale,
                   want.data() + off, one.get(), IsaTier::kRef);
    }
  }
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    std::vector<float> got(q.size(), nan_f());
    Scratch s(attention_scratch_bytes(lay, batch.n_kv_padded, group, tile));
    for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
      for (int64_t t = 0; t < n_tok_call; t += tile) {
        const int64_t nt = std::min(tile, n_tok_call - t), off = t * q_dim + kvh * group * hd;
        attend_tokens(lay, batch, q.data() + off, q_dim, f.cache->k_rows(0), f.cache->v_rows(0), kvh, group, nt,
                      pos0 + t + 1, scale, got.data() + off, q_dim, s.get(), tier);
      }
    }
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * want.size())) << "tier " << isa_tier_name(tier);
  }
}

TEST(FlashAttention, TokenTilesShareKvTilesBitExactly) {
  const KvConfig f16_fa(KvType::kF16, KvType::kF16, FlashAttn::kOn);
  // A prompt from position 0 (the first tokens see a handful of cells), a chunk deep into the
  // cache (partial last K tile), groups 4 (16 tokens per tile), 3 (21, a partial last tile of
  // tokens), 8 and 1 (64), head_dims 64 and 128.
  check_tokens(f16_fa, 64, 4, 300, 0, 100);
  check_tokens(f16_fa, 128, 3, 400, 170, 70);
  check_tokens(f16_fa, 64, 8, 300, 37, 64);
  check_tokens(f16_fa, 64, 1, 260, 100, 130);
  // Below 64 tokens, other K/V types and head_dim % 16 != 0: one token per call, same bits.
  check_tokens(f16_fa, 64, 4, 200, 10, 40);
  check_tokens(KvConfig(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn), 64, 4, 200, 20, 70);
  check_tokens(f16_fa, 80, 2, 200, 5, 64);
  check_tokens(KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOff), 64, 4, 300, 0, 70);
}

// A non-causal call (AttentionBatch::causal false: an image's tokens, a vision encoder): every
// token of the call attends to the same n_kv0 cells, its own later tokens included. Token tiles on
// every path and tier give the bits of one attend_group per token over those cells at the ref
// tier, and the f16 result is close to plain double-precision attention.
void check_non_causal(const KvConfig& config, int64_t hd, int64_t group, int64_t n_ctx, int64_t pos0, int64_t n_tok) {
  SCOPED_TRACE(kv_config_name(config) + " hd " + std::to_string(hd) + " group " + std::to_string(group) + " pos0 " +
               std::to_string(pos0) + " n_tok " + std::to_string(n_tok));
  const int64_t n_kv_heads = 2, n_kv = pos0 + n_tok;
  const Filled f = fill(config, n_kv_heads, hd, n_ctx, 53);
  ASSERT_NE(f.cache, nullptr);
  const AttentionLayout& lay = f.cache->layout();
  AttentionBatch batch = attention_batch(lay, pos0, n_tok, 2);
  batch.causal = false;
  const int64_t tile = attention_token_tile(lay, batch, group);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t q_dim = n_kv_heads * group * hd;
  std::mt19937 rng(43);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  std::vector<float> q(static_cast<size_t>(n_tok * q_dim));
  for (float& x : q) x = dist(rng);
  std::vector<float> want(q.size(), nan_f());
  Scratch one(attention_scratch_bytes(lay, batch.n_kv_padded, group));
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
      const int64_t off = t * q_dim + kvh * group * hd;
      attend_group(lay, batch, q.data() + off, f.cache->k_rows(0), f.cache->v_rows(0), kvh, group, n_kv, scale,
                   want.data() + off, one.get(), IsaTier::kRef);
    }
  }
  if (config.k == KvType::kF16 && config.v == KvType::kF16) {
    for (int64_t t : {int64_t{0}, n_tok - 1}) {  // the first token sees the last one's cell too
      const std::vector<double> plain = naive(f, q.data() + t * q_dim, 0, n_kv, scale);
      double num = 0, den = 0;
      for (int64_t d = 0; d < hd; ++d) {
        const double e = want[static_cast<size_t>(t * q_dim + d)] - plain[static_cast<size_t>(d)];
        num += e * e;
        den += plain[static_cast<size_t>(d)] * plain[static_cast<size_t>(d)];
      }
      ASSERT_LE(std::sqrt(num / den), bound_for(config)) << "token " << t;
    }
  }
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    std::vector<float> got(q.size(), nan_f());
    Scratch s(attention_scratch_bytes(lay, batch.n_kv_padded, group, tile));
    for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
      for (int64_t t = 0; t < n_tok; t += tile) {
        const int64_t nt = std::min(tile, n_tok - t), off = t * q_dim + kvh * group * hd;
        attend_tokens(lay, batch, q.data() + off, q_dim, f.cache->k_rows(0), f.cache->v_rows(0), kvh, group, nt, n_kv,
                      scale, got.data() + off, q_dim, s.get(), tier);
      }
    }
    ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * want.size())) << "tier " << isa_tier_name(tier);
  }
}

TEST(FlashAttention, NonCausalCallsSeeTheWholeCall) {
  const KvConfig f16_fa(KvType::kF16, KvType::kF16, FlashAttn::kOn);
  check_non_causal(f16_fa, 64, 1, 300, 0, 130);   // tiled, a partial last K tile of the call's own cells
  check_non_causal(f16_fa, 64, 4, 300, 37, 100);  // tiled after a prefix, token tiles of 16
  check_non_causal(f16_fa, 72, 2, 200, 0, 90);    // head_dim 72 (the Qwen3.5 ViT): per-row path
  check_non_causal(f16_fa, 64, 3, 100, 5, 40);    // below 64 tokens: per-row path
  check_non_causal(KvConfig(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn), 64, 2, 200, 20, 70);
  check_non_causal(KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOff), 64, 4, 300, 10, 70);
}

// The per-row kernel (every quantized or bf16 K/V, f16 below 64 tokens) with a tile of tokens
// sharing each K tile's gemm and decoded V rows gives the bits of one call per token: every
// type, random shapes (partial token tiles, partial last K tiles, first tokens that see only a
// few cells), mixed K/V types, no rotation.
TEST(FlashAttention, PerRowTokenTilesMatchOneTokenAtATime) {
  std::mt19937 rng(7);
  for (KvType t : kAllTypes) {
    const KvConfig c(t, t, FlashAttn::kOn);
    for (int rep = 0; rep < 2; ++rep) {
      const int64_t hd = std::array<int64_t, 3>{64, 128, 96}[rng() % 3];
      const int64_t group = std::array<int64_t, 4>{1, 3, 4, 8}[rng() % 4];
      const int64_t n_tok = 2 + static_cast<int64_t>(rng() % 70),
                    pos0 = rep == 0 ? 0 : static_cast<int64_t>(rng() % 120);
      check_tokens(c, hd, group, pos0 + n_tok + static_cast<int64_t>(rng() % 5), pos0, n_tok);
    }
  }
  check_tokens(KvConfig(KvType::kQ8_0, KvType::kF16, FlashAttn::kOn), 64, 4, 200, 30, 37);
  check_tokens(KvConfig(KvType::kF16, KvType::kQ4_0, FlashAttn::kOn), 128, 2, 150, 3, 70);
  check_tokens(KvConfig(KvType::kIQ4_NL, KvType::kQ5_1, FlashAttn::kOn), 64, 5, 120, 11, 50);
  check_tokens(KvConfig(KvType::kQ4_0, KvType::kQ8_0, FlashAttn::kOn), 256, 2, 100, 60, 33);
  KvConfig norot(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn);
  norot.rotate = false;
  check_tokens(norot, 64, 4, 200, 64, 65);
}

// softmax_mad_f32 on every tier: the scalar twin's running maximum, sum and accumulator bits,
// for head widths with vector and scalar tails, runs longer than one pass of cells, a fresh row
// (maximum -inf) or a running one, and scores that set a new maximum every cell, tie it, raise
// it by less than expf can tell from 1, or fall far enough below it for expf to underflow.
TEST(FlashAttention, SoftmaxMadMatchesItsScalarTwin) {
  const RowOps& ref = find_row_ops(IsaTier::kRef);
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const RowOps& ops = find_row_ops(tier);
    for (int64_t hd : {1, 7, 8, 9, 32, 64, 72, 96, 128, 136, 256}) {
      for (int64_t n : {1, 5, 63, 64, 65, 130}) {
        for (int pattern = 0; pattern < 5; ++pattern) {
          std::vector<float> scores(static_cast<size_t>(n)), v(static_cast<size_t>(n * hd)),
              acc(static_cast<size_t>(hd));
          for (float& x : v) x = dist(rng);
          for (int64_t i = 0; i < n; ++i) {
            const float r = dist(rng);
            switch (pattern) {
              case 0: scores[static_cast<size_t>(i)] = 3.0f * r; break;
              case 1:
                scores[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i);
                break;                                                                // a new maximum every cell
              case 2: scores[static_cast<size_t>(i)] = i % 3 == 0 ? 1.0f : r; break;  // ties with the maximum
              case 3: scores[static_cast<size_t>(i)] = 1.0f + 1e-7f * static_cast<float>(i); break;  // ms rounds to 1
              default: scores[static_cast<size_t>(i)] = i % 2 == 0 ? 0.0f : -200.0f * std::fabs(r) - 120.0f; break;
            }
          }
          const bool fresh = (n + hd + pattern) % 2 == 0;
          for (float& x : acc) x = fresh ? 0.0f : dist(rng);
          float m_a = fresh ? -INFINITY : 0.5f, s_a = fresh ? 0.0f : 2.0f, m_b = m_a, s_b = s_a;
          std::vector<float> a = acc, b = acc;
          const float scale = 0.125f + static_cast<float>(pattern) * 0.3f;
          ref.softmax_mad_f32(a.data(), &m_a, &s_a, scores.data(), n, scale, v.data(), hd);
          ops.softmax_mad_f32(b.data(), &m_b, &s_b, scores.data(), n, scale, v.data(), hd);
          SCOPED_TRACE(std::string(isa_tier_name(tier)) + " hd " + std::to_string(hd) + " n " + std::to_string(n) +
                       " pattern " + std::to_string(pattern));
          EXPECT_EQ(test::bits(m_a), test::bits(m_b));
          EXPECT_EQ(test::bits(s_a), test::bits(s_b));
          ASSERT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(float) * a.size()));
        }
      }
    }
    // Many weights (the SIMD tiers compute libm's expf four lanes at a time): one cell per head
    // width, scores spread over the whole range below the maximum, the boundaries included.
    std::uniform_real_distribution<float> spread(-110.0f, 0.0f);
    std::vector<float> scores(64), v(64, 1.0f);
    for (int rep = 0; rep < 8000; ++rep) {
      for (size_t i = 0; i < scores.size(); ++i) {
        scores[i] = rep % 4 == 0 ? spread(rng) : rep % 4 == 1 ? -1e-3f * std::fabs(spread(rng)) : spread(rng) / 8.0f;
      }
      if (rep == 0) {
        const float edges[] = {-88.0f, std::nextafter(-88.0f, 0.0f), -87.5f, -0.0f, -1e-30f, -103.9f, -104.0f, -150.0f};
        std::copy(std::begin(edges), std::end(edges), scores.begin() + 1);
      }
      float m_a = 0.0f, s_a = 0.0f, m_b = 0.0f, s_b = 0.0f, a = 0.0f, b = 0.0f;
      ref.softmax_mad_f32(&a, &m_a, &s_a, scores.data(), 64, 1.0f, v.data(), 1);
      ops.softmax_mad_f32(&b, &m_b, &s_b, scores.data(), 64, 1.0f, v.data(), 1);
      ASSERT_EQ(test::bits(a), test::bits(b)) << "rep " << rep;
      ASSERT_EQ(test::bits(s_a), test::bits(s_b)) << "rep " << rep;
    }
  }
}

TEST(FlashAttention, MixedTypesGroupsAndNoRotation) {
  check(KvConfig(KvType::kQ8_0, KvType::kF16, FlashAttn::kOn), 64, 2, 8, 150, {0, 100, 149}, {1, 2});
  check(KvConfig(KvType::kF16, KvType::kQ4_0, FlashAttn::kOn), 64, 1, 12, 100, {5, 99}, {1});
  check(KvConfig(KvType::kIQ4_NL, KvType::kQ5_1, FlashAttn::kOn), 64, 1, 5, 70, {69}, {1});
  KvConfig norot(KvType::kQ4_1, KvType::kQ4_1, FlashAttn::kOn);
  norot.rotate = false;
  check(norot, 64, 2, 2, 90, {0, 89}, {1});
  // A group of 20 heads (more than one pass of any grouped kernel) and head_dim 256.
  check(KvConfig(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn), 256, 1, 20, 70, {69}, {1});
}

TEST(FlashAttention, ConvertedKWithoutFlashAttention) {
  // No flash attention: any K type (Q rotated and converted to K's vec_dot_type), f16 or bf16 V^T.
  for (KvType t : kAllTypes) {
    check(KvConfig(t, KvType::kF16, FlashAttn::kOff), 64, 2, 4, 300, {0, 70, 255, 256, 299}, {1, 5});
  }
  check(KvConfig(KvType::kBF16, KvType::kBF16, FlashAttn::kOff), 64, 1, 3, 100, {0, 99}, {1, 2});
  check(KvConfig(KvType::kQ4_0, KvType::kBF16, FlashAttn::kOff), 128, 1, 2, 100, {50}, {1});
}

TEST(FlashAttention, AccumulatorStepsMatchTheirScalarTwins) {
  const RowOps& ref = find_row_ops(IsaTier::kRef);
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const RowOps& ops = find_row_ops(tier);
    for (int64_t n : {1, 15, 16, 17, 64, 100, 128}) {
      std::vector<float> x(static_cast<size_t>(n)), y(x.size());
      std::vector<uint16_t> xh(x.size()), yh(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        x[i] = dist(rng);
        y[i] = dist(rng) * 100.0f;
        xh[i] = fp32_to_fp16(dist(rng));
        yh[i] = fp32_to_fp16(dist(rng) * 10.0f);
      }
      const float v = dist(rng);
      std::vector<float> a = y, b = y;
      ref.mad_f32(a.data(), x.data(), v, n);
      ops.mad_f32(b.data(), x.data(), v, n);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(float) * a.size())) << "mad_f32 n " << n;
      for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(test::bits(a[i]), test::bits(std::fma(x[i], v, y[i])));
      ref.scale_f32(a.data(), v, n);
      ops.scale_f32(b.data(), v, n);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), sizeof(float) * a.size())) << "scale_f32 n " << n;
      std::vector<uint16_t> ah = yh, bh = yh;
      ref.mad_f16(ah.data(), xh.data(), v, n);
      ops.mad_f16(bh.data(), xh.data(), v, n);
      EXPECT_EQ(ah, bh) << "mad_f16 n " << n;
      for (size_t i = 0; i < ah.size(); ++i) {
        EXPECT_EQ(ah[i], fp32_to_fp16(std::fma(fp16_to_fp32(xh[i]), v, fp16_to_fp32(yh[i]))));
      }
      ref.scale_f16(ah.data(), v, n);
      ops.scale_f16(bh.data(), v, n);
      EXPECT_EQ(ah, bh) << "scale_f16 n " << n;
      std::vector<float> wa(x.size()), wb(x.size());
      ref.widen_f16(xh.data(), wa.data(), n);
      ops.widen_f16(xh.data(), wb.data(), n);
      EXPECT_EQ(wa, wb) << "widen_f16 n " << n;
      // exp_sum against its scalar twin.
      std::vector<float> ea(x), eb(x);
      const float mx = *std::max_element(x.begin(), x.end());
      EXPECT_EQ(ref.exp_sum(ea.data(), n, mx), ops.exp_sum(eb.data(), n, mx)) << "exp_sum n " << n;
      EXPECT_EQ(ea, eb) << "exp_sum n " << n;
    }
  }
}

// The tiled path's products: gemm_f32 on every tier is the scalar twin's in-order FMA chains
// (started from C's value), for shapes with row and column tails; NaN-free random inputs.
TEST(FlashAttention, GemmF32MatchesItsScalarTwin) {
  const RowOps& ref = find_row_ops(IsaTier::kRef);
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const RowOps& ops = find_row_ops(tier);
    for (int64_t m : {1, 3, 4, 5, 13, 64}) {
      for (int64_t k : {1, 17, 64, 128}) {
        for (int64_t n : {1, 8, 15, 16, 64, 70, 128}) {
          std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)),
              c(static_cast<size_t>(m * n));
          for (float& e : a) e = dist(rng);
          for (float& e : b) e = dist(rng);
          for (float& e : c) e = dist(rng);
          std::vector<float> want = c, got = c;
          ref.gemm_f32(want.data(), a.data(), b.data(), m, k, n);
          ops.gemm_f32(got.data(), a.data(), b.data(), m, k, n);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * want.size()))
              << isa_tier_name(tier) << " m " << m << " k " << k << " n " << n;
          // The scalar twin is the definition: one element checked by hand.
          float acc = c[static_cast<size_t>(n - 1)];
          for (int64_t kk = 0; kk < k; ++kk)
            acc = std::fma(a[static_cast<size_t>(kk)], b[static_cast<size_t>(kk * n + n - 1)], acc);
          ASSERT_EQ(test::bits(acc), test::bits(want[static_cast<size_t>(n - 1)]));
        }
      }
    }
  }
}

// widen_f16_cols: the K tile transposed, every element written exactly once, nothing else
// touched (NaN-filled output, padding columns past n_rows kept).
TEST(FlashAttention, WidenF16ColsTransposesExactly) {
  std::mt19937 rng(6);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (IsaTier tier : kAllTiers) {
    if (!host_has(tier)) continue;
    const RowOps& ops = find_row_ops(tier);
    for (int64_t n_rows : {1, 15, 16, 17, 40, 64}) {
      for (int64_t n : {8, 16, 31, 64, 128}) {
        const int64_t out_stride = 64;
        const size_t row_bytes = sizeof(uint16_t) * static_cast<size_t>(n + 3);  // rows wider than n
        std::vector<uint8_t> rows(row_bytes * static_cast<size_t>(n_rows));
        for (int64_t t = 0; t < n_rows; ++t) {
          auto* r = reinterpret_cast<uint16_t*>(rows.data() + row_bytes * static_cast<size_t>(t));
          for (int64_t d = 0; d < n + 3; ++d) r[d] = fp32_to_fp16(dist(rng));
        }
        std::vector<float> out(static_cast<size_t>(n * out_stride), std::nanf(""));
        ops.widen_f16_cols(rows.data(), row_bytes, n_rows, n, out.data(), out_stride);
        for (int64_t d = 0; d < n; ++d) {
          for (int64_t t = 0; t < out_stride; ++t) {
            const float got = out[static_cast<size_t>(d * out_stride + t)];
            if (t >= n_rows) {
              ASSERT_TRUE(std::isnan(got)) << isa_tier_name(tier) << " wrote padding d " << d << " t " << t;
              continue;
            }
            const auto* r = reinterpret_cast<const uint16_t*>(rows.data() + row_bytes * static_cast<size_t>(t));
            ASSERT_EQ(test::bits(fp16_to_fp32(r[d])), test::bits(got))
                << isa_tier_name(tier) << " n_rows " << n_rows << " n " << n << " d " << d << " t " << t;
          }
        }
      }
    }
  }
}

// The memory plan budgets flash_attention_scratch_bound per thread (engine/plan): it must cover
// what every K/V type pair, group and call size really asks for, token tiles included.
TEST(FlashAttention, ScratchBoundCoversEveryTypeGroupAndTile) {
  for (KvType kt : kAllTypes) {
    for (KvType vt : kAllTypes) {
      for (int64_t hd : {64, 96, 128, 256}) {
        for (int64_t group : {1, 2, 3, 4, 8, 16, 64, 80}) {
          AttentionLayout layout;
          layout.k_type = kv_ggml_type(kt);
          layout.v_type = kv_ggml_type(vt);
          layout.flash = true;
          layout.head_dim = hd;
          layout.n_ctx = 4096;
          const size_t bound = flash_attention_scratch_bound(hd, group);
          for (int64_t n_tok : {1, 2, 7, 63, 64, 512}) {
            const AttentionBatch batch = attention_batch(layout, 0, n_tok, 2);
            const int64_t tile = flash_token_tile(layout, batch, group);
            EXPECT_LE(flash_attention_scratch_bytes(layout, group, tile), bound)
                << "k " << static_cast<int>(kt) << " v " << static_cast<int>(vt) << " hd " << hd << " group " << group
                << " n_tok " << n_tok;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace sniper
