// SPDX-License-Identifier: MIT
// Offsets into a model stored as several files (a split GGUF, `*-00001-of-0000N.gguf`): one
// 64-bit value names the file and the position in it, so code that reads weights by offset
// (the weight store, the expert cache, the layer streamer, the I/O engine) handles a split model
// like one file. The high 16 bits are the part index, the low 48 bits the byte offset in that
// part. Part 0's offsets are plain file offsets, so an unsplit file needs no translation.
// Invariant: a byte range never spans two parts (each tensor lies in one file), and offsets of
// different parts are at least 2^48 apart, so no adjacency test can join them.
#pragma once

#include <cstdint>

namespace sniper {

inline constexpr int kPartShift = 48;
inline constexpr uint64_t kPartOffsetMask = (uint64_t{1} << kPartShift) - 1;
inline constexpr uint32_t kMaxParts = 1u << (64 - kPartShift);        // split.count is a u16
inline constexpr uint64_t kMaxPartBytes = uint64_t{1} << kPartShift;  // 256 TiB per part

constexpr uint64_t make_part_offset(uint32_t part, uint64_t offset) {
  return (static_cast<uint64_t>(part) << kPartShift) | offset;
}
constexpr uint32_t part_of(uint64_t part_offset) { return static_cast<uint32_t>(part_offset >> kPartShift); }
constexpr uint64_t offset_in_part(uint64_t part_offset) { return part_offset & kPartOffsetMask; }

}  // namespace sniper
