// SPDX-License-Identifier: MIT
// Grouped attention (kernels/attention.h): every tier and every group size gives the bits of
// the scalar ref tier run one head at a time (the order of operations is per head, so grouping
// the heads that share a kv head must not change a bit), and those results agree with a plain
// double-precision attention over the same cached values. f16 caches (transposed V, vec_dot
// and tinyBLAS orders, padded lengths) and q8_0 caches with flash attention (V in rows; every
// other type and the rotation are in flash_attention_test.cpp).
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/fp16.h"
#include "kernels/kernel_test_util.h"
#include "kernels/kernels.h"
#include "quant/q8_0.h"

namespace sniper {
namespace {

using test::host_has;
using test::kAllTiers;
using test::nan_f;
using test::type_name;

struct Cache {
  AttentionLayout layout;
  int64_t n_kv_heads = 0;
  std::vector<uint8_t> k, v;
  std::vector<float> k_f32, v_f32;  // the cached values decoded, [pos][kv_head][d]
};

// A cache of n_ctx positions, all filled with random values. by_head: each kv head's positions
// contiguous (kv/kv_cache.h's layout), else each position's heads contiguous. f16 V^T rows are
// vt_pad positions longer than n_ctx (the kernels must follow the layout's row stride).
Cache make_cache(GgmlType type, int64_t n_kv_heads, int64_t hd, int64_t n_ctx, uint32_t seed, bool by_head,
                 int64_t vt_pad = 0) {
  Cache c;
  c.n_kv_heads = n_kv_heads;
  c.layout.k_type = type;
  c.layout.v_type = type;
  c.layout.flash = type != GgmlType::kF16;
  c.layout.head_dim = hd;
  c.layout.n_ctx = n_ctx;
  c.layout.head_bytes = type == GgmlType::kF16 ? sizeof(fp16_t) * static_cast<size_t>(hd)
                                               : sizeof(BlockQ8_0) * static_cast<size_t>(hd / 32);
  c.layout.row_bytes = by_head ? c.layout.head_bytes : c.layout.head_bytes * static_cast<size_t>(n_kv_heads);
  c.layout.head_stride = by_head ? c.layout.head_bytes * static_cast<size_t>(n_ctx) : c.layout.head_bytes;
  // Byte offset of (position p, kv head h) in K and row-layout V.
  const auto at_k = [&c](int64_t p, int64_t h) {
    return c.layout.row_bytes * static_cast<size_t>(p) + c.layout.head_stride * static_cast<size_t>(h);
  };
  c.layout.v_head_bytes = c.layout.head_bytes;
  c.layout.v_row_bytes = c.layout.row_bytes;
  c.layout.v_head_stride = c.layout.head_stride;
  c.layout.v_transposed = type == GgmlType::kF16;
  if (c.layout.v_transposed) c.layout.vt_row_bytes = sizeof(fp16_t) * static_cast<size_t>(n_ctx + vt_pad);
  const int64_t width = n_kv_heads * hd;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(width * n_ctx)), v(k.size());
  for (float& x : k) x = dist(rng);
  for (float& x : v) x = dist(rng);
  c.k.resize(c.layout.head_bytes * static_cast<size_t>(n_kv_heads * n_ctx));
  c.v.resize(c.layout.v_transposed ? c.layout.vt_row_bytes * static_cast<size_t>(width) : c.k.size());
  c.k_f32.resize(k.size());
  c.v_f32.resize(v.size());
  for (int64_t p = 0; p < n_ctx; ++p) {
    for (int64_t h = 0; h < n_kv_heads; ++h) {
      const size_t at = static_cast<size_t>(p * width + h * hd);
      uint8_t* kd = c.k.data() + at_k(p, h);
      if (type == GgmlType::kF16) {
        auto* kh = reinterpret_cast<fp16_t*>(kd);
        auto* vt = reinterpret_cast<fp16_t*>(c.v.data());
        for (int64_t i = 0; i < hd; ++i) {
          const size_t row =
              c.layout.vt_row_bytes / sizeof(fp16_t) * static_cast<size_t>(h * hd + i) + static_cast<size_t>(p);  // V^T
          kh[i] = fp32_to_fp16(k[at + static_cast<size_t>(i)]);
          vt[row] = fp32_to_fp16(v[at + static_cast<size_t>(i)]);
          c.k_f32[at + static_cast<size_t>(i)] = fp16_to_fp32(kh[i]);
          c.v_f32[at + static_cast<size_t>(i)] = fp16_to_fp32(vt[row]);
        }
      } else {
        auto* kb = reinterpret_cast<BlockQ8_0*>(kd);
        auto* vb = reinterpret_cast<BlockQ8_0*>(c.v.data() + at_k(p, h));
        quantize_row_q8_0_ref(k.data() + at, kb, hd);
        quantize_row_q8_0_ref(v.data() + at, vb, hd);
        dequantize_row_q8_0_ref(kb, c.k_f32.data() + at, hd);
        dequantize_row_q8_0_ref(vb, c.v_f32.data() + at, hd);
      }
    }
  }
  return c;
}

struct Scratch {
  explicit Scratch(size_t bytes) : buf(bytes + 64) {}
  uint8_t* get() { return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(buf.data()) + 63) & ~uintptr_t{63}); }
  std::vector<uint8_t> buf;
};

std::vector<float> run(const Cache& c, const AttentionBatch& batch, const std::vector<float>& q, int64_t kv_head,
                       int64_t group, int64_t n_kv, IsaTier tier) {
  const int64_t hd = c.layout.head_dim;
  std::vector<float> out(static_cast<size_t>(group * hd), nan_f());
  Scratch s(attention_scratch_bytes(c.layout, batch.n_kv_padded, group));
  attend_group(c.layout, batch, q.data(), c.k.data(), c.v.data(), kv_head, group, n_kv, 0.125f, out.data(), s.get(),
               tier);
  return out;
}

// Plain attention in double over the decoded cache and the query rounded as the kernels round
// it: the results above must be close to it (the f16 path also rounds the softmax weights).
std::vector<double> naive(const Cache& c, const float* q, int64_t kv_head, int64_t n_kv) {
  const int64_t hd = c.layout.head_dim, width = c.n_kv_heads * hd;
  std::vector<double> s(static_cast<size_t>(n_kv)), out(static_cast<size_t>(hd), 0.0);
  // The query as the kernels see it: rounded to f16, or through q8_0.
  std::vector<float> qk(q, q + hd);
  if (c.layout.k_type == GgmlType::kQ8_0) {
    std::vector<BlockQ8_0> blocks(static_cast<size_t>(hd / 32));
    quantize_row_q8_0_ref(q, blocks.data(), hd);
    dequantize_row_q8_0_ref(blocks.data(), qk.data(), hd);
  } else {
    for (float& x : qk) x = fp16_to_fp32(fp32_to_fp16(x));
  }
  double max = -INFINITY;
  for (int64_t j = 0; j < n_kv; ++j) {
    double d = 0;
    for (int64_t i = 0; i < hd; ++i)
      d += static_cast<double>(qk[static_cast<size_t>(i)]) * c.k_f32[static_cast<size_t>(j * width + kv_head * hd + i)];
    s[static_cast<size_t>(j)] = 0.125 * d;
    max = std::max(max, s[static_cast<size_t>(j)]);
  }
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - max));
  for (int64_t j = 0; j < n_kv; ++j) {
    for (int64_t i = 0; i < hd; ++i) {
      out[static_cast<size_t>(i)] +=
          s[static_cast<size_t>(j)] / sum * c.v_f32[static_cast<size_t>(j * width + kv_head * hd + i)];
    }
  }
  return out;
}

void check_all(GgmlType type, int64_t hd, int64_t n_kv_heads, int64_t group, int64_t n_ctx,
               std::initializer_list<int64_t> positions, std::initializer_list<int64_t> n_toks) {
  // The same values in both layouts (V^T rows of n_ctx and of n_ctx + 13 positions): every
  // result must be the same bits in either.
  const Cache c = make_cache(type, n_kv_heads, hd, n_ctx, 7, /*by_head=*/false);
  const Cache c_heads = make_cache(type, n_kv_heads, hd, n_ctx, 7, /*by_head=*/true, /*vt_pad=*/13);
  ASSERT_EQ(c.k_f32, c_heads.k_f32);
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  for (int64_t n_tok : n_toks) {
    for (int64_t pos : positions) {
      // The call covers tokens [pos0, pos0 + n_tok); this query sits at its last position.
      const int64_t pos0 = std::max<int64_t>(0, pos - n_tok + 1);
      const AttentionBatch batch = attention_batch(c.layout, pos0, n_tok);
      const int64_t n_kv = pos + 1;
      for (int64_t kvh = 0; kvh < n_kv_heads; ++kvh) {
        std::vector<float> q(static_cast<size_t>(group * hd));
        for (float& x : q) x = dist(rng);
        // The scalar twin: ref tier, one head at a time.
        std::vector<float> want;
        for (int64_t g = 0; g < group; ++g) {
          const std::vector<float> qg(q.begin() + g * hd, q.begin() + (g + 1) * hd);
          const std::vector<float> o = run(c, batch, qg, kvh, 1, n_kv, IsaTier::kRef);
          want.insert(want.end(), o.begin(), o.end());
          const std::vector<double> plain = naive(c, qg.data(), kvh, n_kv);
          for (int64_t d = 0; d < hd; ++d) {
            ASSERT_NEAR(o[static_cast<size_t>(d)], plain[static_cast<size_t>(d)],
                        0.005 + 0.005 * std::fabs(plain[static_cast<size_t>(d)]))
                << "type " << type_name(type) << " n_kv " << n_kv << " head " << g << " d " << d;
          }
        }
        for (IsaTier tier : kAllTiers) {
          if (!host_has(tier)) continue;
          for (const Cache* cc : {&c, &c_heads}) {
            const std::vector<float> got = run(*cc, batch, q, kvh, group, n_kv, tier);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), sizeof(float) * want.size()))
                << "type " << type_name(type) << " tier " << isa_tier_name(tier) << " hd " << hd << " group " << group
                << " n_kv " << n_kv << " n_tok " << n_tok << " kv head " << kvh
                << (cc == &c ? " (heads interleaved)" : " (heads contiguous)");
          }
        }
      }
    }
  }
}

TEST(Attention, F16GroupsMatchRefPerHead) {
  // Decode (vec_dot order) and batches (tinyBLAS order), below, at and past the 256 padding.
  check_all(GgmlType::kF16, 64, 2, 4, 700, {0, 5, 63, 64, 255, 256, 300, 511, 699}, {1, 2, 7});
  check_all(GgmlType::kF16, 128, 1, 8, 300, {0, 100, 299}, {1, 3});
  check_all(GgmlType::kF16, 80, 2, 3, 300, {0, 17, 290}, {1, 4});  // head_dim % 16 != 0: vec_dot order
  check_all(GgmlType::kF16, 64, 3, 1, 100, {0, 99}, {1, 2});       // n_ctx < 256 and no grouping
  // More heads than K rows per tile: some heads' passes widen none of the next tile's rows.
  check_all(GgmlType::kF16, 64, 1, 20, 300, {0, 40, 299}, {1, 2});
  // A context that is not a multiple of 64 and spans two of the V product's 2048-position chunks:
  // the last positions' dots end in ggml_vec_dot_f16's scalar tail.
  check_all(GgmlType::kF16, 128, 1, 8, 2100, {2047, 2048, 2063, 2099}, {1, 5});
}

TEST(Attention, Q8_0GroupsMatchRefPerHead) {
  check_all(GgmlType::kQ8_0, 64, 2, 4, 600, {0, 1, 31, 255, 599}, {1, 5});
  check_all(GgmlType::kQ8_0, 128, 1, 5, 200, {0, 150}, {1});
  check_all(GgmlType::kQ8_0, 96, 2, 2, 100, {0, 50}, {1});  // an odd number of blocks per head
  // Qwen3-30B-A3B's 8 heads per kv head (one pass), 12 (a pass of 8 and one of 4); positions
  // across the V product's 128-row chunks, odd and even n_kv (the KQ pairs rows).
  check_all(GgmlType::kQ8_0, 128, 2, 8, 400, {0, 127, 128, 130, 399}, {1, 3});
  check_all(GgmlType::kQ8_0, 256, 1, 12, 300, {6, 257}, {1});
  check_all(GgmlType::kQ8_0, 288, 1, 3, 100, {40}, {1});  // head_dim > 256: the gemm path
}

}  // namespace
}  // namespace sniper
