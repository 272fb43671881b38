// SPDX-License-Identifier: MIT
// ExpertSource: how the forward pass gets the routed experts of a layer without knowing where
// their bytes live (resident tensors, or an SSD-backed expert cache).
//
// Protocol per MoE layer, called by one thread:
//   begin_layer(layer_idx, experts)   the union of experts the current chunk routes to; a
//                                     streaming source starts every missing read at once
//   next_ready() ...                  hands the announced experts out one at a time: those
//                                     already in memory first, then each as its read lands;
//                                     expert == -1 when all have been handed out
//   end_layer()                       done with the layer
// The view returned by next_ready() stays valid until the next next_ready() or end_layer().
// prefetch() is a hint about a future layer; it never changes results.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/result.h"
#include "kernels/tensor.h"

namespace sniper {

struct ExpertView {
  QTensor gate;  // [dim -> expert_ff]
  QTensor up;    // [dim -> expert_ff]
  QTensor down;  // [expert_ff -> dim]
};

struct ReadyExpert {
  int32_t expert = -1;  // -1: the layer's experts have all been handed out
  ExpertView view;
};

class ExpertSource {
 public:
  virtual ~ExpertSource() = default;
  [[nodiscard]] virtual Status begin_layer(int64_t layer_idx, std::span<const int32_t> experts) = 0;
  [[nodiscard]] virtual Result<ReadyExpert> next_ready() = 0;
  virtual void end_layer() = 0;
  virtual void prefetch(int64_t layer_idx, std::span<const int32_t> experts) {
    (void)layer_idx;
    (void)experts;
  }
  // True if the caller should compute prefetch predictions (costs one router matmul per layer).
  virtual bool wants_prefetch() const { return false; }
  // How many layers ahead predictions are wanted (1 = the next layer only).
  virtual int prefetch_depth() const { return 1; }
  // Asked between begin_layer() and end_layer(): true if every view next_ready() hands out for
  // the open layer stays valid until end_layer() (not only until the next next_ready()), so the
  // caller may collect the layer's experts and run them together. A cache that must evict a
  // computed expert to make room for a later one of the same layer says false.
  virtual bool views_stable() const { return false; }
  // True if next_ready() would return now, without waiting for a read (or has nothing left to
  // hand out). Polls the reads in flight. A caller collecting a layer's experts runs those it
  // holds while the rest land.
  virtual bool next_is_ready() { return true; }
  // True if the expert's weights are in memory now (cache-aware routing asks; resident: always).
  virtual bool is_cached(int64_t layer_idx, int32_t expert) const {
    (void)layer_idx;
    (void)expert;
    return true;
  }
};

// Experts held in memory: views[layer][expert] (slices of the 3-D ffn_*_exps tensors, or the
// per-expert tensors of a packed file).
class ResidentExperts final : public ExpertSource {
 public:
  explicit ResidentExperts(std::vector<std::vector<ExpertView>> views) : views_(std::move(views)) {}

  Status begin_layer(int64_t layer_idx, std::span<const int32_t> experts) override {
    layer_ = layer_idx;
    pending_ = experts;
    next_ = 0;
    return ok_status();
  }
  Result<ReadyExpert> next_ready() override {
    ReadyExpert r;
    if (next_ >= pending_.size()) return r;
    r.expert = pending_[next_++];
    r.view = views_[static_cast<size_t>(layer_)][static_cast<size_t>(r.expert)];
    return r;
  }
  void end_layer() override { pending_ = {}; }
  bool views_stable() const override { return true; }

 private:
  std::vector<std::vector<ExpertView>> views_;
  int64_t layer_ = 0;
  std::span<const int32_t> pending_;
  size_t next_ = 0;
};

// Another source's layer `offset + l` as layer l: a one-layer block that sits after a model's
// stack (an MTP head's routed experts, blk.<n_layers>) reads them through the model's cache.
// Asks for no prefetches of its own.
class LayerOffsetExperts final : public ExpertSource {
 public:
  LayerOffsetExperts(ExpertSource* inner, int64_t offset) : inner_(inner), offset_(offset) {}

  Status begin_layer(int64_t layer_idx, std::span<const int32_t> experts) override {
    return inner_->begin_layer(offset_ + layer_idx, experts);
  }
  Result<ReadyExpert> next_ready() override { return inner_->next_ready(); }
  void end_layer() override { inner_->end_layer(); }
  bool views_stable() const override { return inner_->views_stable(); }
  bool next_is_ready() override { return inner_->next_is_ready(); }
  bool is_cached(int64_t layer_idx, int32_t expert) const override {
    return inner_->is_cached(offset_ + layer_idx, expert);
  }

 private:
  ExpertSource* inner_;
  int64_t offset_;
};

}  // namespace sniper
