// SPDX-License-Identifier: MIT
// Attention microbenchmark: one decode token's grouped attention (kernels/attention.h) over every
// layer of a KV cache that does not fit in the caches, per KV type and context length, reported
// as time per token and achieved KV read bandwidth. The shapes default to Qwen3-30B-A3B's
// (48 layers, 4 kv heads, 8 query heads per kv head, head_dim 128). One thread, plain wall-clock
// timing (best of several passes). Cached values are random; the figure is about bytes and
// instructions, not values.
// Usage: attention_bench [ctx=128,4096] [types=f16,q8_0] [layers=48] [kv_heads=4] [group=8] [head_dim=128]
//                        [layout=heads|positions]  (heads: each kv head's keys contiguous, as kv/kv_cache.h)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "bench_util.h"
#include "kernels/attention.h"
#include "quant/q8_0.h"

namespace sniper {
namespace {

using bench::now_s;
using bench::split_list;

struct Layer {
  std::vector<uint8_t> k, v;
};

// One layer's cache of n_ctx cells filled with random values in the layout's format.
Layer make_layer(const AttentionLayout& layout, int64_t n_kv_heads, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t hd = layout.head_dim;
  Layer l;
  l.k.resize(layout.head_bytes * static_cast<size_t>(n_kv_heads * layout.n_ctx));
  l.v.resize(layout.v_transposed ? layout.vt_row_bytes * static_cast<size_t>(n_kv_heads * hd) : l.k.size());
  std::vector<float> row(static_cast<size_t>(hd));
  for (int64_t p = 0; p < layout.n_ctx; ++p) {
    for (int64_t h = 0; h < n_kv_heads; ++h) {
      const size_t at = layout.row_bytes * static_cast<size_t>(p) + layout.head_stride * static_cast<size_t>(h);
      for (int kv = 0; kv < 2; ++kv) {
        for (float& x : row) x = dist(rng);
        uint8_t* dst = (kv == 0 ? l.k : l.v).data() + at;
        if (layout.k_type == GgmlType::kQ8_0) {
          quantize_row_q8_0_ref(row.data(), reinterpret_cast<BlockQ8_0*>(dst), hd);
        } else if (kv == 0) {
          auto* k = reinterpret_cast<fp16_t*>(dst);
          for (int64_t i = 0; i < hd; ++i) k[i] = fp32_to_fp16(row[static_cast<size_t>(i)]);
        } else {  // V^T: [kv_head * head_dim + d][vt_row_bytes / 2]
          auto* vt = reinterpret_cast<fp16_t*>(l.v.data());
          const size_t vt_row = layout.vt_row_bytes / sizeof(fp16_t);
          for (int64_t i = 0; i < hd; ++i) {
            vt[static_cast<size_t>(h * hd + i) * vt_row + static_cast<size_t>(p)] =
                fp32_to_fp16(row[static_cast<size_t>(i)]);
          }
        }
      }
    }
  }
  return l;
}

int run(int argc, char** argv) {
  const std::string ctx_arg = argc > 1 ? argv[1] : "128,4096";
  const std::string types_arg = argc > 2 ? argv[2] : "f16,q8_0";
  const int64_t n_layers = argc > 3 ? std::atoll(argv[3]) : 48;
  const int64_t n_kv_heads = argc > 4 ? std::atoll(argv[4]) : 4;
  const int64_t group = argc > 5 ? std::atoll(argv[5]) : 8;
  const int64_t hd = argc > 6 ? std::atoll(argv[6]) : 128;
  const std::string layout_arg = argc > 7 ? argv[7] : "heads";
  if (layout_arg != "heads" && layout_arg != "positions") {
    std::fprintf(stderr, "attention_bench: layout is '%s' but must be heads or positions\n", layout_arg.c_str());
    return 2;
  }
  const bool by_head = layout_arg == "heads";
  if (n_layers < 1 || n_kv_heads < 1 || group < 1 || hd < 32 || hd % 32 != 0) {
    std::fprintf(stderr, "attention_bench: bad shape (layers %lld, kv heads %lld, group %lld, head_dim %lld)\n",
                 static_cast<long long>(n_layers), static_cast<long long>(n_kv_heads), static_cast<long long>(group),
                 static_cast<long long>(hd));
    return 2;
  }
  std::printf(
      "attention_bench: %lld layers, %lld kv heads x %lld query heads, head_dim %lld, K by %s, 1 thread, "
      "tier %s\n",
      static_cast<long long>(n_layers), static_cast<long long>(n_kv_heads), static_cast<long long>(group),
      static_cast<long long>(hd), layout_arg.c_str(), isa_tier_name(selected_tier()));
  std::printf("%-6s %6s %12s %10s\n", "kv", "ctx", "ms/token", "KV GB/s");
  for (const std::string& type_name : split_list(types_arg)) {
    if (type_name != "f16" && type_name != "q8_0") {
      std::fprintf(stderr, "attention_bench: unknown KV type '%s' (f16 or q8_0)\n", type_name.c_str());
      return 2;
    }
    for (const std::string& ctx_s : split_list(ctx_arg)) {
      const int64_t n_kv = std::atoll(ctx_s.c_str());
      if (n_kv < 1) {
        std::fprintf(stderr, "attention_bench: bad context length '%s'\n", ctx_s.c_str());
        return 2;
      }
      AttentionLayout layout;
      layout.k_type = type_name == "f16" ? GgmlType::kF16 : GgmlType::kQ8_0;
      layout.v_type = layout.k_type;
      layout.flash = layout.k_type == GgmlType::kQ8_0;  // a q8_0 V needs flash attention
      layout.head_dim = hd;
      layout.n_ctx = (n_kv + 255) / 256 * 256;
      layout.head_bytes = layout.k_type == GgmlType::kF16 ? sizeof(fp16_t) * static_cast<size_t>(hd)
                                                          : sizeof(BlockQ8_0) * static_cast<size_t>(hd / 32);
      layout.row_bytes = by_head ? layout.head_bytes : layout.head_bytes * static_cast<size_t>(n_kv_heads);
      layout.head_stride = by_head ? layout.head_bytes * static_cast<size_t>(layout.n_ctx) : layout.head_bytes;
      layout.v_head_bytes = layout.head_bytes;
      layout.v_row_bytes = layout.row_bytes;
      layout.v_head_stride = layout.head_stride;
      layout.v_transposed = layout.k_type == GgmlType::kF16;
      if (layout.v_transposed)
        layout.vt_row_bytes = sizeof(fp16_t) * static_cast<size_t>((layout.n_ctx + 31) / 32 * 32);
      std::mt19937 rng(7);
      std::vector<Layer> layers;
      for (int64_t l = 0; l < n_layers; ++l) layers.push_back(make_layer(layout, n_kv_heads, rng));
      const AttentionBatch batch = attention_batch(layout, n_kv - 1, 1);
      const size_t scratch_bytes = attention_scratch_bytes(layout, batch.n_kv_padded, group);
      auto* scratch = static_cast<uint8_t*>(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64));
      std::vector<float> q(static_cast<size_t>(group * hd)), out(q.size());
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (float& x : q) x = dist(rng);
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      auto pass = [&] {
        for (const Layer& l : layers) {
          for (int64_t h = 0; h < n_kv_heads; ++h) {
            attend_group(layout, batch, q.data(), l.k.data(), l.v.data(), h, group, n_kv, scale, out.data(), scratch);
          }
        }
      };
      pass();
      double best = 1e30;
      for (int rep = 0; rep < 5; ++rep) {
        const double t0 = now_s();
        pass();
        best = std::min(best, now_s() - t0);
      }
      std::free(scratch);
      // Bytes a token must read: K and V of n_kv cells per kv head and layer.
      const double bytes = 2.0 * static_cast<double>(layout.head_bytes) * static_cast<double>(n_kv) *
                           static_cast<double>(n_kv_heads * n_layers);
      std::printf("%-6s %6lld %12.3f %10.2f\n", type_name.c_str(), static_cast<long long>(n_kv), best * 1e3,
                  bytes / best / 1e9);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sniper

int main(int argc, char** argv) { return sniper::run(argc, argv); }
