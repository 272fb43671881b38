// SPDX-License-Identifier: MIT
// GGUF writer (v3). Metadata and the tensor table are collected first; write() then emits the
// header and streams each tensor's bytes from its fill callback, so files far larger than RAM
// can be produced. Tensor data is aligned to `general.alignment` (default 32).
// Thread-compatible.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "gguf/format.h"
#include "gguf/reader.h"

namespace sniper {

class GgufWriter {
 public:
  // Fills dst[0, nbytes) with the tensor's bytes. Called once per tensor, in add order.
  using FillFn = std::function<void(uint8_t* dst, size_t nbytes)>;

  void set_alignment(uint32_t alignment);                   // a power of two; also written as general.alignment
  void set_value(const std::string& key, GgufValue value);  // replaces an existing key
  void set_u32(const std::string& key, uint32_t v);
  void set_i32(const std::string& key, int32_t v);
  void set_u64(const std::string& key, uint64_t v);
  void set_f32(const std::string& key, float v);
  void set_bool(const std::string& key, bool v);
  void set_string(const std::string& key, const std::string& v);
  void set_string_array(const std::string& key, const std::vector<std::string>& v);
  void set_f32_array(const std::string& key, const std::vector<float>& v);
  void set_i32_array(const std::string& key, const std::vector<int32_t>& v);

  // Adds a tensor; ne is in ggml order (ne[0] = row length) with 1..4 dims.
  void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, FillFn fill);
  // Convenience: copies `bytes` (must equal the tensor's size).
  void add_tensor_bytes(const std::string& name, GgmlType type, const std::vector<int64_t>& ne,
                        std::vector<uint8_t> bytes);

  // Writes the file (to path + ".tmp", then renames, so a failed write leaves no partial file).
  [[nodiscard]] Status write(const std::string& path) const;
  // Serialises the whole file to memory (tests, fuzz seeds).
  std::vector<uint8_t> to_bytes() const;
  // The size in bytes of the file write() produces (no fill callback is called).
  uint64_t file_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> ne;
    size_t nbytes;
    FillFn fill;
  };
  // Everything before the data section, padding included; fills each tensor's data offset.
  std::vector<uint8_t> header_bytes(std::vector<uint64_t>* offsets) const;

  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<PendingTensor> tensors_;
  uint32_t alignment_ = kGgufDefaultAlignment;
};

}  // namespace sniper
