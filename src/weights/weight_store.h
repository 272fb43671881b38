// SPDX-License-Identifier: MIT
// WeightStore: where tensor bytes live. `resident` reads the file's data section into one
// 64-byte-aligned allocation (i-quant tensors optionally repacked on the way in); `mmap` maps the file read-only and
// lets the kernel page it in (the usual approach, kept as a baseline). Model code sees only QTensor views; it never
// opens files. The store outlives every QTensor it hands out. Thread-safe after open().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "kernels/tensor.h"

namespace sniper {

// Bytes of weights read so far and in all (WeightStore::open).
using LoadProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

enum class Residency { kResident, kMmap };

// Parses "resident" | "mmap".
Result<Residency> parse_residency(std::string_view text);
const char* residency_name(Residency residency);

class WeightStore {
 public:
  // Opens the files of `gguf.parts` (one, or every part of a split model) and makes every tensor's bytes addressable,
  // except the tensors named in `streamed` (resident residency only): those keep their shape and type but have data ==
  // nullptr, and their bytes come from a streaming source instead. The tensors named in `repacked` (resident residency
  // only; names whose type has no repacked layout are ignored) are converted while they load into their lookup-free
  // layouts (quant/iq_repack.h): their QTensor has the layout's type and row bytes, and every product with it equals
  // the file type's bit for bit. Errors name the file and the failing system call. Thread-compatible. `progress` (may
  // be empty) sees the file bytes read so far and in all while resident tensors load; it is called from the loading
  // threads, one call at a time, after each read.
  static Result<std::unique_ptr<WeightStore>> open(const GgufFile& gguf, Residency residency,
                                                   const std::unordered_set<std::string>* streamed = nullptr,
                                                   const std::unordered_set<std::string>* repacked = nullptr,
                                                   const LoadProgress& progress = {});
  ~WeightStore();
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Returns the tensor's view, or nullptr if the file has no such tensor.
  const QTensor* find_tensor(std::string_view name) const;
  Residency residency() const { return residency_; }
  // Bytes this store holds in anonymous memory (0 for mmap).
  uint64_t resident_bytes() const { return resident_bytes_; }
  // Tensors held in a repacked layout.
  int64_t n_repacked() const { return n_repacked_; }
  const GgufFile& gguf() const { return *gguf_; }

 private:
  WeightStore() = default;

  const GgufFile* gguf_ = nullptr;
  Residency residency_ = Residency::kResident;
  uint8_t* base_ = nullptr;                         // resident: the one allocation holding the loaded tensors
  std::vector<std::pair<void*, size_t>> mappings_;  // mmap: each part's mapping and its length
  uint64_t resident_bytes_ = 0;
  int64_t n_repacked_ = 0;
  std::unique_ptr<QTensor[]> tensors_;
};

}  // namespace sniper
