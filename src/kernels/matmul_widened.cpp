// SPDX-License-Identifier: MIT
#include "kernels/matmul_widened.h"

#include <algorithm>
#include <atomic>

#include "kernels/kernels.h"
#include "kernels/ops.h"

namespace sniper {

size_t matmul_widened_bytes(int64_t n, int64_t n_tok, int n_threads) {
  const size_t acts = (sizeof(float) * static_cast<size_t>(n * n_tok) + 63) / 64 * 64;
  return acts + static_cast<size_t>(n_threads) * kWidenedChunkBytes;
}

void matmul_widened(const QTensor& w, const float* x, float* y, int64_t n_tok, ActBuffer& buf, ThreadPool& pool,
                    IsaTier tier) {
  const KernelTable* k16 = find_kernels(w.type, tier);
  const KernelTable* k32 = find_kernels(GgmlType::kF32, tier);
  const int64_t n = w.ne[0], n_rows = w.n_rows();
  // The F32 table's batched chain is the F16 one's on widened values: same lanes, same k step.
  const bool widened = w.type == GgmlType::kF16 && k16 != nullptr && k32 != nullptr && n_tok >= 2 &&
                       k16->gemm_batched != nullptr && k32->gemm_batched != nullptr &&
                       k16->batched_k_multiple == k32->batched_k_multiple && n % k16->batched_k_multiple == 0 &&
                       n_rows % 4 == 0 && sizeof(float) * static_cast<size_t>(4 * n) <= kWidenedChunkBytes;
  if (!widened) {
    matmul(w, x, y, n_tok, buf, pool, tier);
    return;
  }
  const int n_threads = pool.n_threads();
  uint8_t* base = buf.reserve(matmul_widened_bytes(n, n_tok, n_threads));
  auto* acts = reinterpret_cast<float*>(base);
  uint8_t* slices =
      base + (matmul_widened_bytes(n, n_tok, n_threads) - static_cast<size_t>(n_threads) * kWidenedChunkBytes);
  const RowOps& ops = find_row_ops(tier);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / n);
  pool.parallel_for(n_tok, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) ops.round_fp16_row(x + t * n, acts + t * n, n);
  });
  // Chunks of whole 4-row groups that fit a slice, at least ~4 per thread.
  const int64_t fit = static_cast<int64_t>(kWidenedChunkBytes / (sizeof(float) * static_cast<size_t>(n))) / 4 * 4;
  const int64_t spread = std::max<int64_t>(4, (n_rows / (4 * n_threads) + 3) / 4 * 4);
  const int64_t chunk = std::min(fit, spread);
  const int64_t n_chunks = (n_rows + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  pool.run([&](int thread_idx, int) {
    auto* wide = reinterpret_cast<float*>(slices + static_cast<size_t>(thread_idx) * kWidenedChunkBytes);
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= n_chunks) break;
      const int64_t r0 = c * chunk, rows = std::min(chunk, n_rows - r0);
      for (int64_t r = 0; r < rows; ++r) {
        ops.widen_f16(reinterpret_cast<const uint16_t*>(w.row(r0 + r)), wide + r * n, n);
      }
      k32->gemm_batched(n, rows, n_tok, wide, sizeof(float) * static_cast<size_t>(n), acts,
                        sizeof(float) * static_cast<size_t>(n), y + r0, n_rows);
    }
  });
}

}  // namespace sniper
