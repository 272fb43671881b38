// SPDX-License-Identifier: MIT
// Block scratch, declared once. A block lists its activation buffers in a table: each entry a
// std::vector member and its element count for a config and a batch size. The constructor sizes
// every buffer from the table (allocate_scratch), scratch_bytes() reports what they hold
// (held_scratch_bytes), and the memory plan's bound sums the same table (scratch_table_bytes,
// through each block's static scratch_bound and Transformer::estimate_scratch_bytes), so the plan
// and the allocation cannot drift apart. Buffers a block grows on first use (per-thread attention
// scratch, whose size depends on the cache layout and the context) are bounded by the block
// beside its table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"

namespace sniper {

template <class Block>
struct ScratchEntry {
  std::vector<float> Block::*floats = nullptr;                              // a float buffer, or
  std::vector<int32_t> Block::*ints = nullptr;                              // an int32 buffer
  size_t (*count)(const ModelConfig& config, int64_t max_batch) = nullptr;  // its elements
};

template <class Block>
void allocate_scratch(Block& block, std::span<const ScratchEntry<Block>> table, const ModelConfig& config,
                      int64_t max_batch) {
  for (const ScratchEntry<Block>& e : table) {
    const size_t n = e.count(config, max_batch);
    if (e.floats != nullptr) {
      (block.*e.floats).resize(n);
    } else {
      (block.*e.ints).resize(n);
    }
  }
}

template <class Block>
size_t scratch_table_bytes(std::span<const ScratchEntry<Block>> table, const ModelConfig& config, int64_t max_batch) {
  size_t bytes = 0;
  for (const ScratchEntry<Block>& e : table) {
    bytes += e.count(config, max_batch) * (e.floats != nullptr ? sizeof(float) : sizeof(int32_t));
  }
  return bytes;
}

template <class Block>
size_t held_scratch_bytes(const Block& block, std::span<const ScratchEntry<Block>> table) {
  size_t bytes = 0;
  for (const ScratchEntry<Block>& e : table) {
    bytes += e.floats != nullptr ? (block.*e.floats).size() * sizeof(float) : (block.*e.ints).size() * sizeof(int32_t);
  }
  return bytes;
}

// max_batch * n as a size_t (table counts).
inline size_t rows(int64_t max_batch, int64_t n) { return static_cast<size_t>(max_batch) * static_cast<size_t>(n); }

}  // namespace sniper
