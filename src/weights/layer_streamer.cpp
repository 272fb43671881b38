// SPDX-License-Identifier: MIT
#include "weights/layer_streamer.h"

#include <chrono>
#include <cstdlib>

#include "base/check.h"
#include "base/huge_pages.h"

namespace sniper {

Result<std::unique_ptr<LayerStreamer>> LayerStreamer::create(std::vector<std::vector<const GgufTensorInfo*>> groups,
                                                             IoEngine* io, uint64_t buffer_bytes) {
  std::unique_ptr<LayerStreamer> s(new LayerStreamer());
  s->groups_ = std::move(groups);
  s->io_ = io;
  s->buffer_bytes_ = (buffer_bytes + 4095) / 4096 * 4096;
  for (size_t l = 0; l < s->groups_.size(); ++l) {
    uint64_t need = 0;
    for (const GgufTensorInfo* t : s->groups_[l])
      need += (io->span_for(t->file_offset, t->nbytes).aligned_length + 4095) / 4096 * 4096;
    if (need > s->buffer_bytes_) {
      return make_error("layer %zu needs %llu bytes of stream buffer but the plan gives %llu", l,
                        static_cast<unsigned long long>(need), static_cast<unsigned long long>(s->buffer_bytes_));
    }
  }
  for (Buffer& b : s->buf_) {
    b.data = map_pages(s->buffer_bytes_ == 0 ? 4096 : s->buffer_bytes_);
    if (b.data == nullptr)
      return make_error("cannot allocate a %llu-byte layer buffer", static_cast<unsigned long long>(s->buffer_bytes_));
  }
  return s;
}

LayerStreamer::~LayerStreamer() {
  if (io_ != nullptr && io_->n_outstanding() > 0) (void)io_->wait_all();
  for (Buffer& b : buf_) unmap_pages(b.data, buffer_bytes_ == 0 ? 4096 : buffer_bytes_);
}

Status LayerStreamer::start(Buffer& b, int64_t layer_idx) {
  const auto& group = groups_[static_cast<size_t>(layer_idx)];
  std::vector<ReadRequest> reqs;
  b.views.clear();
  uint64_t at = 0;
  for (const GgufTensorInfo* t : group) {
    const AlignedSpan span = io_->span_for(t->file_offset, t->nbytes);
    reqs.push_back({t->file_offset, t->nbytes, b.data + at});
    QTensor v;
    v.type = t->type;
    v.ne = t->ne;
    v.row_bytes = t->row_bytes();
    v.data = b.data + at + span.lead;
    b.views.push_back(v);
    at += (span.aligned_length + 4095) / 4096 * 4096;
    stats_.bytes_read += span.aligned_length;
  }
  b.tickets.assign(reqs.size(), 0);
  b.layer = layer_idx;
  b.loading = true;
  Status st = io_->submit_batch(reqs, b.tickets);
  if (!st.ok()) {
    b.layer = -1;
    b.loading = false;
  }
  return st;
}

Status LayerStreamer::finish(Buffer& b) {
  if (!b.loading) return ok_status();
  const auto t0 = std::chrono::steady_clock::now();
  Status first;
  for (ReadTicket t : b.tickets) {
    Status st = io_->wait(t);
    if (!st.ok() && first.ok()) first = st;
  }
  stats_.stall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  b.loading = false;
  if (!first.ok()) {
    const int64_t layer = b.layer;
    b.layer = -1;
    Status changed = io_->file().check_unchanged();
    return make_error("streaming layer %ld failed: %s%s%s", static_cast<long>(layer), first.error().message.c_str(),
                      changed.ok() ? "" : "; ", changed.ok() ? "" : changed.error().message.c_str());
  }
  ++stats_.layers_loaded;
  return ok_status();
}

int64_t LayerStreamer::next_streamed(int64_t layer_idx) const {
  const int64_t n = static_cast<int64_t>(groups_.size());
  for (int64_t i = 1; i <= n; ++i) {
    const int64_t l = (layer_idx + i) % n;
    if (!groups_[static_cast<size_t>(l)].empty()) return l;
  }
  return -1;
}

Status LayerStreamer::prefetch(int64_t layer_idx, int keep) {
  if (layer_idx < 0 || buf_[0].layer == layer_idx || buf_[1].layer == layer_idx) return ok_status();
  Buffer& b = buf_[keep == 0 ? 1 : 0];
  SNIPER_TRY(finish(b));  // a stale prefetch may still be landing there
  return start(b, layer_idx);
}

Status LayerStreamer::acquire(int64_t layer_idx) {
  const int64_t n = static_cast<int64_t>(groups_.size());
  CHECK(layer_idx >= 0 && layer_idx < n);
  if (groups_[static_cast<size_t>(layer_idx)].empty()) {
    // Nothing of this layer streams (its weights are resident): the SSD keeps reading the next
    // streamed layer meanwhile, into a buffer no view points to any more.
    current_ = -1;
    return prefetch(next_streamed(layer_idx), -1);
  }
  int idx = buf_[0].layer == layer_idx ? 0 : buf_[1].layer == layer_idx ? 1 : -1;
  if (idx < 0) {
    // Not prefetched (first call, or out of order): read it into the buffer not in use.
    idx = current_ == 0 ? 1 : 0;
    SNIPER_TRY(finish(buf_[idx]));  // a stale prefetch may still be landing there
    SNIPER_TRY(start(buf_[idx], layer_idx));
  }
  SNIPER_TRY(finish(buf_[idx]));
  current_ = idx;
  // The next streamed layer goes to the other buffer (when this is the only streamed layer it
  // simply stays where it is).
  return prefetch(next_streamed(layer_idx), idx);
}

const QTensor* LayerStreamer::find(std::string_view name) const {
  if (current_ < 0) return nullptr;
  const Buffer& b = buf_[current_];
  const auto& group = groups_[static_cast<size_t>(b.layer)];
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i]->name == name) return &b.views[i];
  }
  return nullptr;
}

}  // namespace sniper
