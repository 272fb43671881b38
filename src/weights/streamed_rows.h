// SPDX-License-Identifier: MIT
// StreamedRows: rows of a tensor that stays on disk (token embeddings under a tight budget),
// read on demand: every row a chunk needs is requested at once, then dequantized to f32.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "io/io_engine.h"

namespace sniper {

class StreamedRows {
 public:
  // `tensor` and `io` outlive this object.
  StreamedRows(const GgufTensorInfo* tensor, IoEngine* io);
  ~StreamedRows();
  // out[i * ne0 .. ] = row rows[i] as f32, for i < n. Errors: a failed or short read.
  [[nodiscard]] Status read(const int32_t* rows, int64_t n, float* out);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  const GgufTensorInfo* tensor_;
  IoEngine* io_;
  uint8_t* buf_ = nullptr;
  size_t buf_bytes_ = 0;
  uint64_t bytes_read_ = 0;
  std::vector<ReadRequest> reqs_;
  std::vector<ReadTicket> tickets_;
  std::vector<uint64_t> leads_;
};

}  // namespace sniper
