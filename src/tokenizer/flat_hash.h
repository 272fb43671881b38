// SPDX-License-Identifier: MIT
// Flat open-addressing hash tables for the tokenizer's two hot lookups: token text -> id and
// (left id, right id) -> BPE merge rank. One contiguous array each (linear probing, load <= 1/2),
// no per-entry allocation, so building them for a 150k-token vocab with 280k merges is cheap.
// Invariants: capacity is a power of two; entries are never removed. Thread-safe for const use.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sniper {

// Token ids keyed by their text. The texts live in a vector owned by the caller and passed to
// every call (so moving the owner does not invalidate anything).
class TokenIndex {
 public:
  // Prepares for `n` entries.
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    slots_.assign(cap, 0);
  }

  // Inserts `id` (whose text is texts[id]). Returns -1, or the id already stored for that text.
  int32_t insert(int32_t id, const std::vector<std::string>& texts) {
    const std::string_view text = texts[size_t(id)];
    const uint64_t h = std::hash<std::string_view>{}(text);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const uint64_t slot = slots_[i];
      if (slot == 0) {
        slots_[i] = pack(h, id);
        return -1;
      }
      if (tag(slot) == tag_of(h) && texts[size_t(id_of(slot))] == text) return id_of(slot);
    }
  }

  // The id whose text equals `text`, or -1.
  int32_t find(std::string_view text, const std::vector<std::string>& texts) const {
    if (slots_.empty()) return -1;
    const uint64_t h = std::hash<std::string_view>{}(text);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const uint64_t slot = slots_[i];
      if (slot == 0) return -1;
      if (tag(slot) == tag_of(h) && texts[size_t(id_of(slot))] == text) return id_of(slot);
    }
  }

 private:
  // A slot packs the high 32 hash bits (to skip most string compares) and id + 1 (0 = empty).
  static uint64_t pack(uint64_t h, int32_t id) { return (tag_of(h) << 32) | (uint64_t(uint32_t(id)) + 1); }
  static uint64_t tag_of(uint64_t h) { return h >> 32; }
  static uint64_t tag(uint64_t slot) { return slot >> 32; }
  static int32_t id_of(uint64_t slot) { return int32_t(uint32_t(slot) - 1); }
  size_t mask() const { return slots_.size() - 1; }

  std::vector<uint64_t> slots_;
};

// Merge ranks keyed by the pair of token ids.
class PairRankMap {
 public:
  void reserve(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    keys_.assign(cap, kEmpty);
    ranks_.assign(cap, -1);
  }

  // Stores `rank` unless the pair already has one (the first merge listed wins).
  void insert_if_absent(int32_t left, int32_t right, int32_t rank) {
    const uint64_t key = make_key(left, right);
    for (size_t i = hash(key) & mask();; i = (i + 1) & mask()) {
      if (keys_[i] == key) return;
      if (keys_[i] == kEmpty) {
        keys_[i] = key;
        ranks_[i] = rank;
        return;
      }
    }
  }

  // The rank of the pair, or -1.
  int32_t find(int32_t left, int32_t right) const {
    if (keys_.empty()) return -1;
    const uint64_t key = make_key(left, right);
    for (size_t i = hash(key) & mask();; i = (i + 1) & mask()) {
      if (keys_[i] == key) return ranks_[i];
      if (keys_[i] == kEmpty) return -1;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t(0);  // ids are < 2^31, so no real key is all ones
  static uint64_t make_key(int32_t left, int32_t right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  static uint64_t hash(uint64_t key) {  // splitmix64 finalizer
    key ^= key >> 30;
    key *= 0xBF58476D1CE4E5B9ull;
    key ^= key >> 27;
    key *= 0x94D049BB133111EBull;
    return key ^ (key >> 31);
  }
  size_t mask() const { return keys_.size() - 1; }

  std::vector<uint64_t> keys_;
  std::vector<int32_t> ranks_;
};

}  // namespace sniper
