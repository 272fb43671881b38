// SPDX-License-Identifier: MIT
#include "engine/batch_eval.h"

#include "base/check.h"

namespace sniper {

Result<std::unique_ptr<BatchEvaluator>> BatchEvaluator::create(Model& model, int64_t max_rows, int64_t n_ctx,
                                                               const RoutingBias& routing_bias, ThreadPool& pool,
                                                               RemoteExperts* remote_experts) {
  if (max_rows < 1 || max_rows > kMaxPassRows) {
    return make_error("batch pass of %ld rows but it must be in [1, %ld]", static_cast<long>(max_rows),
                      static_cast<long>(kMaxPassRows));
  }
  std::unique_ptr<BatchEvaluator> e(new BatchEvaluator(model, pool));
  WeightSources sources = model.sources();
  sources.remote_experts = remote_experts;
  e->transformer_ = std::make_unique<Transformer>(model.config(), model.weights(), max_rows, n_ctx, sources);
  e->transformer_->set_routing_bias(routing_bias);
  return e;
}

Status BatchEvaluator::eval(std::span<const BatchItem> items) {
  first_out_.clear();  // no logits until this pass succeeds
  if (items.empty()) return make_error("a batch pass needs at least one item");
  int64_t rows = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const BatchItem& it = items[i];
    CHECK(it.session != nullptr && it.session->batchable(), "batch item %zu: no session, or one that cannot batch", i);
    for (size_t j = 0; j < i; ++j)
      CHECK(items[j].session != it.session, "batch items %zu and %zu share a session", j, i);
    Status st = it.session->check_eval(it.tokens);
    if (!st.ok()) return make_error("batch item %zu: %s", i, st.error().message.c_str());
    const int64_t n = static_cast<int64_t>(it.tokens.size());
    if (n > max_seq_rows()) {
      return make_error("batch item %zu has %ld tokens, but one sequence takes at most %ld per pass", i,
                        static_cast<long>(n), static_cast<long>(max_seq_rows()));
    }
    rows += n;
  }
  if (rows > max_rows()) {
    return make_error("a batch pass of %ld tokens exceeds the budget of %ld", static_cast<long>(rows),
                      static_cast<long>(max_rows()));
  }
  tokens_.clear();
  seqs_.clear();
  out_rows_.clear();
  for (const BatchItem& it : items) {
    const int64_t n = static_cast<int64_t>(it.tokens.size());
    SeqRows s;
    s.state = &it.session->state_mut();
    s.row0 = static_cast<int64_t>(tokens_.size());
    s.n_tok = n;
    s.pos0 = it.session->n_past();
    seqs_.push_back(s);
    tokens_.insert(tokens_.end(), it.tokens.begin(), it.tokens.end());
    first_out_.push_back(out_rows_.size());
    for (int64_t r = it.all_logits ? 0 : n - 1; r < n; ++r) out_rows_.push_back(s.row0 + r);
  }
  first_out_.push_back(out_rows_.size());
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  logits_.resize(out_rows_.size() * vocab);
  Status st = transformer_->forward_batch(tokens_.data(), seqs_, out_rows_, logits_.data(), pool_);
  if (!st.ok()) {
    first_out_.clear();
    for (const BatchItem& it : items) it.session->drop_rows(static_cast<int64_t>(it.tokens.size()));
    return st;
  }
  if (ExpertCache* cache = model_.expert_cache()) cache->end_token();
  for (size_t i = 0; i < items.size(); ++i) {
    const float* last = logits_.data() + (first_out_[i + 1] - 1) * vocab;
    items[i].session->accept_rows(items[i].tokens, last);
  }
  return ok_status();
}

std::span<const float> BatchEvaluator::logits(size_t i) const {
  CHECK(i + 1 < first_out_.size(), "logits of item %zu, but the last pass had %zu", i,
        first_out_.empty() ? size_t{0} : first_out_.size() - 1);
  const size_t vocab = static_cast<size_t>(model_.config().vocab_size);
  return std::span<const float>(logits_).subspan(first_out_[i] * vocab, (first_out_[i + 1] - first_out_[i]) * vocab);
}

}  // namespace sniper
