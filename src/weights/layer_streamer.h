// SPDX-License-Identifier: MIT
// LayerStreamer: dense weights that do not fit in RAM, streamed layer by layer through two
// buffers. While layer l is computed from one buffer, the next layer with anything to stream
// (after the last layer: the first of the next token) is read into the other, so memory stays
// at two layers however long the run. Layers whose group is empty (the plan kept them
// resident) read nothing; the SSD works on the next streamed layer meanwhile.
// Thread-compatible; acquire() is called in layer order.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "gguf/reader.h"
#include "io/io_engine.h"
#include "kernels/tensor.h"

namespace sniper {

struct LayerStreamStats {
  uint64_t bytes_read = 0;
  double stall_seconds = 0;
  uint64_t layers_loaded = 0;
};

class LayerStreamer {
 public:
  // groups[l]: the tensors of layer l that stream. buffer_bytes must hold any group with its
  // O_DIRECT widening (the plan's layer_buffer_bytes).
  static Result<std::unique_ptr<LayerStreamer>> create(std::vector<std::vector<const GgufTensorInfo*>> groups,
                                                       IoEngine* io, uint64_t buffer_bytes);
  ~LayerStreamer();

  // Makes layer l's tensors available (waiting for their reads) and starts reading the next
  // layer into the other buffer. Views stay valid until the acquire() after next.
  [[nodiscard]] Status acquire(int64_t layer_idx);
  // The view of a streamed tensor of the acquired layer, or nullptr if it is not streamed.
  const QTensor* find(std::string_view name) const;
  const LayerStreamStats& stats() const { return stats_; }

 private:
  struct Buffer {
    uint8_t* data = nullptr;
    int64_t layer = -1;
    bool loading = false;
    std::vector<ReadTicket> tickets;
    std::vector<QTensor> views;
  };
  LayerStreamer() = default;
  Status start(Buffer& b, int64_t layer_idx);
  Status finish(Buffer& b);
  // The first layer after layer_idx (cyclically, itself last) with tensors to stream; -1: none.
  int64_t next_streamed(int64_t layer_idx) const;
  // Starts reading layer_idx unless a buffer holds it already, into the buffer other than
  // `keep` (-1: no buffer is in use; buffer 0 then).
  Status prefetch(int64_t layer_idx, int keep);

  std::vector<std::vector<const GgufTensorInfo*>> groups_;
  IoEngine* io_ = nullptr;
  uint64_t buffer_bytes_ = 0;
  Buffer buf_[2];
  int current_ = -1;  // buffer holding the acquired layer
  LayerStreamStats stats_;
};

}  // namespace sniper
