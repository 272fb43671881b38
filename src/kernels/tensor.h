// SPDX-License-Identifier: MIT
// QTensor: a non-owning view of a (possibly quantized) weight tensor: type, shape, bytes.
// Model code holds weights only as QTensors; matmul picks its kernel from `type`.
// Invariant: rows are contiguous, row_bytes == row_bytes(type, ne[0]), data spans
// ne[1]*ne[2]*ne[3] rows.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "gguf/format.h"

namespace sniper {

struct QTensor {
  GgmlType type = GgmlType::kF32;
  std::array<int64_t, 4> ne{1, 1, 1, 1};  // ggml order: ne[0] = row length (input dim)
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;

  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  size_t nbytes() const { return row_bytes * static_cast<size_t>(n_rows()); }
  const uint8_t* row(int64_t r) const { return data + row_bytes * static_cast<size_t>(r); }
  // The 2-D matrix at index i2 of a 3-D tensor (e.g. one expert of ffn_up_exps [dim, ff, n_experts]).
  QTensor matrix(int64_t i2) const {
    QTensor m = *this;
    m.ne = {ne[0], ne[1], 1, 1};
    m.data = data + row_bytes * static_cast<size_t>(ne[1] * i2);
    return m;
  }
};

}  // namespace sniper
