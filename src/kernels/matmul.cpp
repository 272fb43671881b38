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

QuantizedActs quantize_acts(GgmlType type, const float* x, int64_t n, int64_t n_tok, int64_t x_stride,
                            ActBuffer& buf, ThreadPool& pool, IsaTier tier) {
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
  pool.parallel_for(n_tok, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) quantize(x + t * x_stride, dst + static_cast<size_t>(t) * rb, n);
  });
  act.data = dst;
  return act;
}

void matmul_q(const QTensor& w, const QuantizedActs& act, float* y, int64_t y_stride, ThreadPool& pool,
              IsaTier tier, MatmulOrder order) {
  const KernelTable* k = find_kernels(w.type, tier);
  CHECK(k != nullptr, "no kernels for weight type %u at tier %s", static_cast<unsigned>(w.type), isa_tier_name(tier));
  CHECK(act.type == k->vec_dot_type, "activation type %u but weight type %u needs %u",
        static_cast<unsigned>(act.type), static_cast<unsigned>(w.type), static_cast<unsigned>(k->vec_dot_type));
  CHECK(act.n == w.ne[0], "activation length %lld != weight row length %lld", static_cast<long long>(act.n),
        static_cast<long long>(w.ne[0]));
  const int64_t n_rows = w.n_rows();
  CHECK(y_stride >= n_rows, "y_stride %lld < n_rows %lld", static_cast<long long>(y_stride),
        static_cast<long long>(n_rows));
  if (n_rows == 0 || act.n_tok == 0) return;
  // ggml's mul_mat hands batches (n_tok >= 2) to llamafile_sgemm, whose float kernels accept
  // only k % KN == 0 and m % 4 == 0 (m: rows of the whole weight); otherwise vec_dot runs.
  const bool batched = order == MatmulOrder::kAuto && act.n_tok >= 2 && k->gemm_batched != nullptr &&
                       act.n % k->batched_k_multiple == 0 && n_rows % 4 == 0;
  const auto gemm = batched ? k->gemm_batched : k->gemm;
  // Chunks of up to 32 rows (a few hundred KB of weights at most, so they stay in L2 across
  // token tiles), but at least ~4 chunks per thread so dynamic hand-out balances.
  const int64_t per_thread = n_rows / (4 * static_cast<int64_t>(pool.n_threads()));
  const int64_t grain = std::clamp<int64_t>(per_thread, 4, 32);
  pool.parallel_for(n_rows, grain, [&](int64_t begin, int64_t end) {
    gemm(act.n, end - begin, act.n_tok, w.row(begin), w.row_bytes, act.data, act.row_bytes, y + begin, y_stride);
  });
}

void matmul(const QTensor& w, const float* x, float* y, int64_t n_tok, ActBuffer& buf, ThreadPool& pool,
            IsaTier tier, MatmulOrder order) {
  const KernelTable* k = find_kernels(w.type, tier);
  CHECK(k != nullptr, "no kernels for weight type %u at tier %s", static_cast<unsigned>(w.type), isa_tier_name(tier));
  const QuantizedActs act = quantize_acts(k->vec_dot_type, x, w.ne[0], n_tok, w.ne[0], buf, pool, tier);
  matmul_q(w, act, y, w.n_rows(), pool, tier, order);
}

}  // namespace sniper
