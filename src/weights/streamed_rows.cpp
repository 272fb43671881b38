// SPDX-License-Identifier: MIT
#include "weights/streamed_rows.h"

#include <cstdlib>

#include "kernels/kernels.h"

namespace sniper {

StreamedRows::StreamedRows(const GgufTensorInfo* tensor, IoEngine* io) : tensor_(tensor), io_(io) {}

StreamedRows::~StreamedRows() {
  if (io_->n_outstanding() > 0) (void)io_->wait_all();
  std::free(buf_);
}

Status StreamedRows::read(const int32_t* rows, int64_t n, float* out) {
  const uint64_t rb = tensor_->row_bytes();
  // Each row's aligned span, laid out one after another in the buffer.
  size_t need = 0;
  reqs_.resize(static_cast<size_t>(n));
  tickets_.resize(static_cast<size_t>(n));
  leads_.resize(static_cast<size_t>(n));
  std::vector<size_t> at(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t off = tensor_->file_offset + rb * static_cast<uint64_t>(rows[i]);
    const AlignedSpan span = io_->span_for(off, rb);
    at[static_cast<size_t>(i)] = need;
    leads_[static_cast<size_t>(i)] = span.lead;
    need += (span.aligned_length + 4095) / 4096 * 4096;
  }
  if (need > buf_bytes_) {
    std::free(buf_);
    buf_ = static_cast<uint8_t*>(std::aligned_alloc(4096, need));
    if (buf_ == nullptr) {
      buf_bytes_ = 0;
      return make_error("cannot allocate %zu bytes for embedding rows", need);
    }
    buf_bytes_ = need;
  }
  for (int64_t i = 0; i < n; ++i) {
    reqs_[static_cast<size_t>(i)] = {tensor_->file_offset + rb * static_cast<uint64_t>(rows[i]), rb,
                                     buf_ + at[static_cast<size_t>(i)]};
  }
  SNIPER_TRY(io_->submit_batch(reqs_, tickets_));
  Status first;
  for (ReadTicket t : tickets_) {
    Status st = io_->wait(t);
    if (!st.ok() && first.ok()) first = st;
  }
  if (!first.ok()) return make_error("reading rows of '%s': %s", tensor_->name.c_str(), first.error().message.c_str());
  const KernelTable& kt = get_kernels(tensor_->type);
  for (int64_t i = 0; i < n; ++i) {
    kt.dequant_row(buf_ + at[static_cast<size_t>(i)] + leads_[static_cast<size_t>(i)], out + i * tensor_->ne[0],
                   tensor_->ne[0]);
    bytes_read_ += rb;
  }
  return ok_status();
}

}  // namespace sniper
