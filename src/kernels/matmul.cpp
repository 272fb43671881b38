// SPDX-License-Identifier: MIT
// matmul: quantize activations to the weight type's vec_dot_type, then split the weight rows
// into chunks handed out dynamically over the ThreadPool; each chunk runs the table's gemm over
// all tokens (token tiles inside, so a chunk's weights are reused from cache across tiles).
#include "kernels/matmul.h"

#include <algorithm>
#include <cstdint>

#include "base/check.h"
#include "kernels/kernels.h"

namespace sniper {

uint8_t* ActBuffer::reserve(size_t bytes) {
  if (capacity() < bytes) {
    storage_.clear();
    storage_.shrink_to_fit();
    storage_.resize(bytes + kAlignment);
  }
  const auto addr = reinterpret_cast<uintptr_t>(storage_.data());
  const size_t pad = (kAlignment - addr % kAlignment) % kAlignment;
  return storage_.data() + pad;
}

QuantizedActs quantize_acts(GgmlType type, const float* x, int64_t n, int64_t n_tok, int64_t x_stride, ActBuffer& buf,
                            ThreadPool& pool, IsaTier tier) {
  CHECK(n >= 0 && n_tok >= 0 && x_stride >= n, "bad activation shape n=%lld n_tok=%lld x_stride=%lld",
        static_cast<long long>(n), static_cast<long long>(n_tok), static_cast<long long>(x_stride));
  QuantizedActs act;
  act.type = type;
  act.n = n;
  act.n_tok = n_tok;
  act.row_bytes = row_bytes(type, n);
  if (type == GgmlType::kF32 && x_stride == n) {
    act.data = reinterpret_cast<const uint8_t*>(x);
    return act;
  }
  const QuantizeActFn quantize = find_act_quantizer(type, tier);
  CHECK(quantize != nullptr, "no activation quantizer for type %u at tier %s", static_cast<unsigned>(type),
        isa_tier_name(tier));
  uint8_t* dst = buf.reserve(act.row_bytes * static_cast<size_t>(n_tok));
  const size_t rb = act.row_bytes;
  // Rows per chunk: a few microseconds of work each, so that a decode step's small batches (the
  // down-projection inputs of its 8 experts, 8 x 768 floats) run on the calling thread instead
  // of paying a parallel region (a wake-up and a barrier) for less work than that costs.
  constexpr int64_t kMinChunkFloats = int64_t{1} << 14;
  const int64_t grain = std::max<int64_t>(1, kMinChunkFloats / std::max<int64_t>(n, 1));
  pool.parallel_for(n_tok, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) quantize(x + t * x_stride, dst + static_cast<size_t>(t) * rb, n);
  });
  act.data = dst;
  return act;
}

namespace {

// Rows per chunk of a matmul over `rows` rows (all jobs of a multi call) with n_tok tokens, for
// about `per_thread` chunks per thread. Several token tiles: the chunk's weights stay in L2 while
// the tiles reuse them, so up to about 1 MiB of rows (row_bytes: the widest row), between 32 and
// 128 rows; 128-row chunks ran the Q4_K / Q6_K tiles (64 tokens, 4096 rows, n = 4096 and 12288)
// 7-9% faster than 32-row ones, 256 no faster again. One tile (decode, and the few tokens each
// expert gets from a prefill chunk): every row is read once, so chunks go up to 512 rows (and at
// least 8 per thread); each chunk start restarts the prefetch streams on a new stretch of memory,
// and with 32-row chunks decode ran 5-9% slower (qwen3-8b) and 8% (qwen3-30b-a3b).
int64_t chunk_grain(int64_t rows, int64_t n_tok, size_t row_bytes, int n_threads, int64_t per_thread) {
  constexpr int64_t kOneTileTokens = 8;  // the widest token tile of any kernel
  constexpr int64_t kTileChunkBytes = int64_t{1} << 20;
  const bool one_tile = n_tok <= kOneTileTokens;
  if (one_tile) per_thread = std::max<int64_t>(per_thread, 8);
  const int64_t bytes = std::max<int64_t>(static_cast<int64_t>(row_bytes), 1);
  const int64_t cap = one_tile ? 512 : std::clamp<int64_t>(kTileChunkBytes / bytes, 32, 128);
  return std::clamp<int64_t>(rows / (per_thread * n_threads), 4, cap);
}

using GemmFn = decltype(KernelTable::gemm);

// The kernel of one product and its chunk grain (a multiple of the kernel's row group).
struct GemmChoice {
  GemmFn gemm;
  int64_t grain;
};

GemmChoice choose_gemm(const KernelTable& k, int64_t n, int64_t n_rows, int64_t n_tok, MatmulOrder order,
                       int64_t grain) {
  // Quantized batches: the row-lane gemm where the table has one and the batch pays for its
  // transposed copy of the weights.
  const int64_t block = static_cast<int64_t>(get_type_info(k.type).block_size);
  if (k.gemm_rows != nullptr && n_tok >= k.rows_min_tokens && n / block <= k.rows_max_blocks) {
    return {k.gemm_rows, (grain + k.rows_group - 1) / k.rows_group * k.rows_group};
  }
  // ggml's mul_mat hands batches (n_tok >= 2) to llamafile_sgemm, whose float kernels accept
  // only k % KN == 0 and m % 4 == 0 (m: rows of the whole weight); otherwise vec_dot runs.
  const bool batched = order == MatmulOrder::kAuto && n_tok >= 2 && k.gemm_batched != nullptr &&
                       n % k.batched_k_multiple == 0 && n_rows % 4 == 0;
  return {batched ? k.gemm_batched : k.gemm, grain};
}

}  // namespace

void matmul_q(const QTensor& w, const QuantizedActs& act, float* y, int64_t y_stride, ThreadPool& pool, IsaTier tier,
              MatmulOrder order) {
  const KernelTable* k = find_kernels(w.type, tier);
  CHECK(k != nullptr, "no kernels for weight type %u at tier %s", static_cast<unsigned>(w.type), isa_tier_name(tier));
  CHECK(act.type == k->vec_dot_type, "activation type %u but weight type %u needs %u", static_cast<unsigned>(act.type),
        static_cast<unsigned>(w.type), static_cast<unsigned>(k->vec_dot_type));
  CHECK(act.n == w.ne[0], "activation length %lld != weight row length %lld", static_cast<long long>(act.n),
        static_cast<long long>(w.ne[0]));
  const int64_t n_rows = w.n_rows();
  CHECK(y_stride >= n_rows, "y_stride %lld < n_rows %lld", static_cast<long long>(y_stride),
        static_cast<long long>(n_rows));
  if (n_rows == 0 || act.n_tok == 0) return;
  // At least ~4 chunks per thread so dynamic hand-out balances (see chunk_grain).
  const GemmChoice g = choose_gemm(*k, act.n, n_rows, act.n_tok, order,
                                   chunk_grain(n_rows, act.n_tok, w.row_bytes, pool.n_threads(), 4));
  pool.parallel_for(n_rows, g.grain, [&](int64_t begin, int64_t end) {
    g.gemm(act.n, end - begin, act.n_tok, w.row(begin), w.row_bytes, act.data, act.row_bytes, y + begin, y_stride);
  });
}

void matmul_q_multi(std::span<const MatmulJob> jobs, ThreadPool& pool, IsaTier tier, MatmulOrder order) {
  // Per job: its kernel, its chunk grain and the index of its first chunk in the shared range.
  struct Plan {
    GemmFn gemm;
    int64_t grain;
    int64_t first_chunk;
  };
  CHECK(jobs.size() <= kMaxMatmulJobs, "matmul_q_multi: %zu jobs, at most %zu", jobs.size(), kMaxMatmulJobs);
  Plan plans[kMaxMatmulJobs];
  int64_t n_chunks = 0;
  int64_t total_rows = 0, max_tok = 0;
  size_t max_row_bytes = 0;
  for (const MatmulJob& j : jobs) {
    total_rows += j.w->n_rows();
    max_tok = std::max(max_tok, j.act.n_tok);
    max_row_bytes = std::max(max_row_bytes, j.w->row_bytes);
  }
  // About 8 chunks per thread over all jobs (see chunk_grain).
  const int64_t grain = chunk_grain(total_rows, max_tok, max_row_bytes, pool.n_threads(), 8);
  for (size_t i = 0; i < jobs.size(); ++i) {
    const MatmulJob& j = jobs[i];
    const KernelTable* k = find_kernels(j.w->type, tier);
    CHECK(k != nullptr, "no kernels for weight type %u at tier %s", static_cast<unsigned>(j.w->type),
          isa_tier_name(tier));
    CHECK(j.act.type == k->vec_dot_type && j.act.n == j.w->ne[0] && j.y_stride >= j.w->n_rows(),
          "matmul_q_multi job %zu: activation type %u / length %lld / stride %lld do not fit weight type %u [%lld x "
          "%lld]",
          i, static_cast<unsigned>(j.act.type), static_cast<long long>(j.act.n), static_cast<long long>(j.y_stride),
          static_cast<unsigned>(j.w->type), static_cast<long long>(j.w->ne[0]), static_cast<long long>(j.w->n_rows()));
    const GemmChoice g = choose_gemm(*k, j.act.n, j.w->n_rows(), j.act.n_tok, order, grain);
    plans[i] = {g.gemm, g.grain, n_chunks};
    if (j.act.n_tok > 0) n_chunks += (j.w->n_rows() + g.grain - 1) / g.grain;
  }
  if (n_chunks == 0) return;
  pool.parallel_for(n_chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      // The last job whose first chunk is at or before c.
      const Plan* it = std::upper_bound(plans, plans + jobs.size(), c,
                                        [](int64_t chunk, const Plan& p) { return chunk < p.first_chunk; });
      const size_t i = static_cast<size_t>(it - plans) - 1;
      const MatmulJob& j = jobs[i];
      const Plan& p = plans[i];
      const int64_t r0 = (c - p.first_chunk) * p.grain;
      const int64_t r1 = std::min(r0 + p.grain, j.w->n_rows());
      p.gemm(j.act.n, r1 - r0, j.act.n_tok, j.w->row(r0), j.w->row_bytes, j.act.data, j.act.row_bytes, j.y + r0,
             j.y_stride);
    }
  });
}

void matmul(const QTensor& w, const float* x, float* y, int64_t n_tok, ActBuffer& buf, ThreadPool& pool, IsaTier tier,
            MatmulOrder order) {
  const KernelTable* k = find_kernels(w.type, tier);
  CHECK(k != nullptr, "no kernels for weight type %u at tier %s", static_cast<unsigned>(w.type), isa_tier_name(tier));
  const QuantizedActs act = quantize_acts(k->vec_dot_type, x, w.ne[0], n_tok, w.ne[0], buf, pool, tier);
  matmul_q(w, act, y, w.n_rows(), pool, tier, order);
}

}  // namespace sniper
