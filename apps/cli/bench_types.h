// SPDX-License-Identifier: MIT
// Matvec speed per weight type on the model's own resident tensors: for each type the decode
// step multiplies with, one token times a pass over that type's matrices (routed experts: every
// expert's matrices), in GB/s of the bytes as they sit in memory, next to the RAM read probe.
// It shows which kernel keeps a decode from the roofline (an i-quant at a third of the probe
// while Q4_K reads at it). Used by `sniper bench`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "engine/model.h"

namespace sniper::cli {

struct TypeMatvec {
  std::string type;       // the type as held in memory, e.g. "iq2_rp"
  std::string file_type;  // the file's type when the tensors were repacked (else empty)
  uint64_t bytes = 0;     // bytes of the matrices one pass reads
  int64_t n_tensors = 0;  // tensors of this type in the model
  double gb_per_s = 0;    // best of the timed passes
};

// Times, for every weight type of the model's resident matmul tensors (per file type when
// repacked: IQ2_XXS and IQ2_S tensors both held as iq2_rp are two entries), `reps` passes (after one
// untimed) of a one-token matmul over the type's matrices, up to max_bytes of them per pass,
// with the activations quantized as decode does. Thread-compatible (uses pool).
std::vector<TypeMatvec> measure_type_matvecs(const Model& model, ThreadPool& pool, int reps = 3,
                                             uint64_t max_bytes = uint64_t{1} << 30);

}  // namespace sniper::cli
