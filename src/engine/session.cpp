// SPDX-License-Identifier: MIT
#include "engine/session.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "model/context_shift.h"

namespace sniper {

Session::Session(Model& model, const SessionOptions& options)
    : model_(model), options_(options), pool_(options.n_threads) {}

Result<std::unique_ptr<Session>> Session::create(Model& model, const SessionOptions& options) {
  const ModelConfig& c = model.config();
  SessionOptions o = options;
  if (o.n_ctx < 0)
    return make_error("context size is %ld but must be >= 0 (0 = model default)", static_cast<long>(o.n_ctx));
  if (o.n_ctx == 0) o.n_ctx = model.planned_n_ctx();
  if (model.streams() && o.n_ctx > model.planned_n_ctx()) {
    return make_error(
        "context size %ld exceeds the %ld tokens the memory plan was made for (load the model with a "
        "larger context)",
        static_cast<long>(o.n_ctx), static_cast<long>(model.planned_n_ctx()));
  }
  if (o.n_ctx > c.n_ctx_train) {
    return make_error("context size is %ld but the model was trained for at most %ld tokens",
                      static_cast<long>(o.n_ctx), static_cast<long>(c.n_ctx_train));
  }
  if (o.batch < 1 || o.batch > 4096) {
    return make_error("batch size is %ld but must be in [1, 4096]", static_cast<long>(o.batch));
  }
  if (o.n_threads < 0 || o.n_threads > 1024) {
    return make_error("thread count is %d but must be in [0, 1024] (0 = all cores)", o.n_threads);
  }
  if (o.routing_bias.keep != 0) {
    const RoutingBias& b = o.routing_bias;
    if (!c.is_moe()) return make_error("routing bias needs a mixture-of-experts model");
    if (c.n_experts_active > 64)
      return make_error("routing bias supports at most 64 active experts, the model uses %ld",
                        static_cast<long>(c.n_experts_active));
    if (b.keep < 1 || b.keep > c.n_experts_active || b.window < c.n_experts_active || b.window > c.n_experts) {
      return make_error("routing bias %ld:%ld must satisfy 1 <= keep <= %ld <= window <= %ld",
                        static_cast<long>(b.keep), static_cast<long>(b.window), static_cast<long>(c.n_experts_active),
                        static_cast<long>(c.n_experts));
    }
  }
  if (o.n_checkpoints < 0 || o.n_checkpoints > 256) {
    return make_error("checkpoint count is %ld but must be in [0, 256] (0 = none)", static_cast<long>(o.n_checkpoints));
  }
  if (o.checkpoint_interval < 1) {
    return make_error("checkpoint interval is %ld tokens but must be at least 1",
                      static_cast<long>(o.checkpoint_interval));
  }
  std::unique_ptr<Session> s(new Session(model, o));
  auto state = SequenceState::create(layer_state_specs(c), o.n_ctx, o.kv_type);
  if (!state.ok()) return state.error();
  s->state_ = std::move(state).value();
  if (o.n_checkpoints > 0 && s->state_->needs_checkpoints()) {
    s->checkpoints_ = std::make_unique<StateCheckpoints>(o.n_checkpoints, s->state_->checkpoint_bytes(o.n_ctx));
  }
  WeightSources sources = model.sources();
  sources.remote_experts = o.remote_experts;
  s->transformer_ = std::make_unique<Transformer>(c, model.weights(), std::min(o.batch, o.n_ctx), o.n_ctx, sources);
  s->transformer_->set_routing_bias(o.routing_bias);
  s->last_logits_.resize(static_cast<size_t>(c.vocab_size));
  return s;
}

Status Session::check_eval(std::span<const int32_t> tokens) const {
  const ModelConfig& c = model_.config();
  if (tokens.empty()) return make_error("nothing to evaluate: the token list is empty");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= c.vocab_size) {
      return make_error("token %d at index %zu is outside the vocabulary [0, %ld)", tokens[i], i,
                        static_cast<long>(c.vocab_size));
    }
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n_past() + n > n_ctx()) {
    return make_error(
        "context limit: %ld tokens already in context + %ld new = %ld, but the context holds %ld "
        "(raise it with --ctx, up to the model's %ld)",
        static_cast<long>(n_past()), static_cast<long>(n), static_cast<long>(n_past() + n), static_cast<long>(n_ctx()),
        static_cast<long>(c.n_ctx_train));
  }
  return ok_status();
}

void Session::accept_rows(std::span<const int32_t> tokens, const float* last_row_logits) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  std::memcpy(last_logits_.data(), last_row_logits, last_logits_.size() * sizeof(float));
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  if (checkpoints_ && n > 1 && n_past() - checkpoints_->latest() >= options_.checkpoint_interval) checkpoint();
}

void Session::drop_rows(int64_t n_tok) {
  // A recurrent state has absorbed part of the chunk (or a ring has overwritten rows the window
  // still needed): the evaluated prefix is kept only where the state can be rewound to it, else
  // back to the latest checkpoint (or the start).
  if (!state_->rewindable(n_past() + n_tok)) {
    const int64_t kept = checkpoints_ ? checkpoints_->restore(*state_, n_past()) : 0;
    if (kept == 0) state_->reset_recurrent();
    history_.resize(static_cast<size_t>(kept));
  }
}

Status Session::eval(std::span<const int32_t> tokens, std::vector<float>* all_logits) {
  const ModelConfig& c = model_.config();
  SNIPER_TRY(check_eval(tokens));
  const int64_t n = static_cast<int64_t>(tokens.size());
  const size_t vocab = static_cast<size_t>(c.vocab_size);
  if (all_logits != nullptr) all_logits->resize(static_cast<size_t>(n) * vocab);
  const int64_t batch = transformer_->max_batch();
  // After media in an M-RoPE model, text rope positions run behind the cells.
  ChunkInput in;
  in.rope_offset = rope_position(n_past()) - n_past();
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t m = std::min(batch, n - start);
    float* out;
    if (all_logits != nullptr) {
      out = all_logits->data() + static_cast<size_t>(start) * vocab;
    } else {
      out = last_logits_.data();
    }
    const int64_t pos0 = n_past();
    float* hidden = observer_ != nullptr ? hidden_.data() : nullptr;
    Status st = transformer_->forward(tokens.data() + start, m, pos0, *state_, all_logits != nullptr, out, pool_,
                                      hidden, in.rope_offset != 0 ? &in : nullptr);
    if (!st.ok()) {
      drop_rows(m);
      return st;
    }
    if (ExpertCache* cache = model_.expert_cache()) cache->end_token();
    history_.insert(history_.end(), tokens.begin() + start, tokens.begin() + start + m);
    if (observer_ != nullptr)
      observer_->on_chunk(tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(m)), pos0, hidden);
    if (checkpoints_ && n > 1 && n_past() - checkpoints_->latest() >= options_.checkpoint_interval) checkpoint();
  }
  if (all_logits != nullptr) {
    std::memcpy(last_logits_.data(), all_logits->data() + static_cast<size_t>(n - 1) * vocab, vocab * sizeof(float));
  }
  return ok_status();
}

Status Session::shift_context(int64_t n_keep, int64_t n_discard) {
  SNIPER_TRY(context_shift_support(model_.config()));
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > n_past()) {
    return make_error(
        "context shift keeps %ld tokens and discards %ld, but the context holds %ld (need keep >= 0, "
        "discard >= 1, keep + discard <= %ld)",
        static_cast<long>(n_keep), static_cast<long>(n_discard), static_cast<long>(n_past()),
        static_cast<long>(n_past()));
  }
  const int64_t end = n_keep + n_discard;
  for (const MediaSpan& span : media_) {
    if (model_.config().has_mrope()) {
      return make_error("context shift over media is not supported for a model with M-RoPE positions");
    }
    if ((span.start < n_keep && span.end() > n_keep) || (span.start < end && span.end() > end)) {
      return make_error("context shift of positions [%ld, %ld) would cut the media chunk at [%ld, %ld)",
                        static_cast<long>(n_keep), static_cast<long>(end), static_cast<long>(span.start),
                        static_cast<long>(span.end()));
    }
  }
  ::sniper::shift_context(model_.config(), model_.weights(), *state_, n_keep, n_discard, n_past(), pool_);
  history_.erase(history_.begin() + n_keep, history_.begin() + n_keep + n_discard);
  std::vector<MediaSpan> kept;
  std::vector<std::shared_ptr<const MediaChunk>> kept_chunks;
  for (size_t i = 0; i < media_.size(); ++i) {
    MediaSpan span = media_[i];
    if (span.start >= n_keep && span.start < end) continue;  // discarded whole
    if (span.start >= end) span.start -= n_discard;
    kept.push_back(span);
    kept_chunks.push_back(media_chunks_[i]);
  }
  media_ = std::move(kept);
  media_chunks_ = std::move(kept_chunks);
  if (observer_ != nullptr) observer_->on_rewrite(n_keep);
  if (checkpoints_) checkpoints_->clear();  // positions moved: no checkpoint describes the state any more
  return ok_status();
}

void Session::set_history(std::vector<int32_t> tokens, std::vector<MediaSpan> media) {
  CHECK(static_cast<int64_t>(tokens.size()) <= n_ctx(), "history of %zu tokens exceeds the context %ld", tokens.size(),
        static_cast<long>(n_ctx()));
  for (const MediaSpan& span : media) {
    CHECK(span.start >= 0 && span.n_tokens >= 1 && span.end() <= static_cast<int64_t>(tokens.size()),
          "media span [%ld, %ld) outside a history of %zu", static_cast<long>(span.start),
          static_cast<long>(span.end()), tokens.size());
  }
  history_ = std::move(tokens);
  media_ = std::move(media);
  media_chunks_.assign(media_.size(), nullptr);
  if (observer_ != nullptr) observer_->on_rewrite(0);
  // A restored state is a prefix worth coming back to (a saved system prompt, a document).
  if (checkpoints_) {
    checkpoints_->clear();
    checkpoint();
  }
}

void Session::set_observer(ForwardObserver* observer) {
  observer_ = observer;
  const size_t n = static_cast<size_t>(transformer_->max_batch() * model_.config().dim);
  if (observer_ == nullptr) {
    std::vector<float>().swap(hidden_);
  } else {
    hidden_.resize(n);
  }
}

void Session::checkpoint() {
  if (checkpoints_ && n_past() > 0 && checkpoints_->latest() != n_past()) checkpoints_->save(*state_, n_past());
}

int64_t Session::media_boundary(int64_t n) const {
  for (const MediaSpan& span : media_) {
    if (span.start < n && n < span.end()) return span.start;
  }
  return n;
}

int64_t Session::rope_position(int64_t n) const {
  int64_t p = n;
  for (const MediaSpan& span : media_) {
    if (span.end() <= n) p += span.n_pos - span.n_tokens;
  }
  return p;
}

int64_t Session::reusable_prefix(int64_t n) const {
  n = media_boundary(std::max<int64_t>(n, 0));
  if (n >= n_past()) return n_past();
  if (state_->rewindable(n_past())) return n;
  return checkpoints_ ? checkpoints_->latest_at_or_before(n) : 0;
}

int64_t Session::truncate(int64_t n) {
  n = std::max<int64_t>(n, 0);
  if (n >= n_past()) return n_past();
  n = media_boundary(n);
  if (!state_->rewindable(n_past())) {
    n = checkpoints_ ? checkpoints_->restore(*state_, n) : 0;
    if (n == 0) state_->reset_recurrent();
  }
  if (checkpoints_) checkpoints_->drop_after(n);
  history_.resize(static_cast<size_t>(n));
  while (!media_.empty() && media_.back().end() > n) {
    media_.pop_back();
    media_chunks_.pop_back();
  }
  return n;
}

Status Session::rewind(int64_t keep, int64_t* n_redo) {
  *n_redo = 0;
  if (keep >= n_past()) return ok_status();
  const std::vector<int32_t> cells(history_.begin(), history_.begin() + keep);
  const std::vector<MediaSpan> spans = media_;
  const std::vector<std::shared_ptr<const MediaChunk>> chunks = media_chunks_;
  int64_t at = truncate(keep);
  *n_redo = keep - at;
  for (size_t i = 0; i < spans.size() && at < keep; ++i) {
    const MediaSpan& span = spans[i];
    if (span.end() <= at || span.start >= keep) continue;
    if (span.start > at) SNIPER_TRY(eval(std::span<const int32_t>(cells).subspan(at, span.start - at)));
    if (chunks[i] == nullptr) {
      return make_error(
          "going back needs the media at cells [%ld, %ld) evaluated again, but its chunk is not held "
          "(a restored state): send the media again",
          static_cast<long>(span.start), static_cast<long>(span.end()));
    }
    SNIPER_TRY(eval_media(*chunks[i]));
    at = n_past();
  }
  if (at < keep) SNIPER_TRY(eval(std::span<const int32_t>(cells).subspan(at, keep - at)));
  return ok_status();
}

Status Session::eval_media(const MediaChunk& chunk) {
  const ModelConfig& c = model_.config();
  const int64_t n = chunk.n_tokens(), dim = c.dim;
  if (chunk.dim != dim) {
    return make_error("media embeddings have width %ld but the model's width is %ld", static_cast<long>(chunk.dim),
                      static_cast<long>(dim));
  }
  if (n < 1 || chunk.embd.size() != static_cast<size_t>(n * dim)) {
    return make_error("media chunk holds %zu floats, not %ld tokens of width %ld", chunk.embd.size(),
                      static_cast<long>(n), static_cast<long>(dim));
  }
  if (observer_ != nullptr) {
    return make_error("media input with an MTP draft head attached is not supported (the head reads token ids)");
  }
  if (n_past() + n > n_ctx()) {
    return make_error(
        "context limit: %ld tokens already in context + %ld media tokens = %ld, but the context holds %ld",
        static_cast<long>(n_past()), static_cast<long>(n), static_cast<long>(n_past() + n), static_cast<long>(n_ctx()));
  }
  if (chunk.non_causal && n > transformer_->max_chunk()) {
    return make_error(
        "the media chunk has %ld tokens that attend to each other, but one forward of this session takes at most %ld "
        "(load the model with a larger batch, at least the projector's largest image)",
        static_cast<long>(n), static_cast<long>(transformer_->max_chunk()));
  }
  const int64_t start = n_past();
  const int64_t rope0 = rope_position(start);
  const std::vector<int32_t> rope = media_rope_positions(c, chunk, rope0);
  const std::vector<int32_t> zeros(static_cast<size_t>(chunk.non_causal ? n : std::min(n, max_batch())), 0);
  const int64_t part = chunk.non_causal ? n : max_batch();
  std::vector<int32_t> rope_part;
  for (int64_t t0 = 0; t0 < n; t0 += part) {
    const int64_t m = std::min(part, n - t0);
    ChunkInput in;
    in.embd = chunk.embd.data() + t0 * dim;
    in.non_causal = chunk.non_causal;
    if (!rope.empty()) {
      rope_part.resize(static_cast<size_t>(4 * m));
      for (int64_t k = 0; k < 4; ++k) {
        std::copy_n(rope.begin() + k * n + t0, m, rope_part.begin() + k * m);
      }
      in.rope_pos = rope_part.data();
    } else {
      in.rope_offset = rope0 - start;
    }
    Status st =
        transformer_->forward(zeros.data(), m, start + t0, *state_, false, last_logits_.data(), pool_, nullptr, &in);
    if (!st.ok()) {
      // Keep what can be kept before the chunk (never a part of it).
      if (!state_->rewindable(n_past() + m)) {
        const int64_t kept = checkpoints_ ? checkpoints_->restore(*state_, start) : 0;
        if (kept == 0) state_->reset_recurrent();
        history_.resize(static_cast<size_t>(kept));
        while (!media_.empty() && media_.back().end() > kept) {
          media_.pop_back();
          media_chunks_.pop_back();
        }
      } else {
        history_.resize(static_cast<size_t>(start));
      }
      return st;
    }
    if (ExpertCache* cache = model_.expert_cache()) cache->end_token();
    history_.insert(history_.end(), static_cast<size_t>(m), kMediaToken);
  }
  MediaSpan span;
  span.start = start;
  span.n_tokens = n;
  span.n_pos = media_n_pos(c, chunk);
  span.kind = chunk.kind;
  span.hash = chunk.hash;
  media_.push_back(span);
  media_chunks_.push_back(std::make_shared<const MediaChunk>(chunk));
  // A second turn over the same media comes back here.
  checkpoint();
  return ok_status();
}

Status Session::eval_prompt(const MediaPrompt& prompt) {
  if (common_prefix(prompt) < n_past()) {
    return make_error(
        "the session's %ld evaluated cells are not a prefix of the prompt (truncate to the common prefix "
        "first)",
        static_cast<long>(n_past()));
  }
  int64_t cell = 0;
  for (const PromptPiece& piece : prompt.pieces) {
    const int64_t size = piece.media != nullptr ? piece.media->n_tokens() : static_cast<int64_t>(piece.tokens.size());
    const int64_t done = n_past() - cell;
    if (done < size) {
      if (piece.media != nullptr) {
        SNIPER_TRY(eval_media(*piece.media));
      } else {
        SNIPER_TRY(
            eval(std::span<const int32_t>(piece.tokens).subspan(static_cast<size_t>(std::max<int64_t>(done, 0)))));
      }
    }
    cell += size;
  }
  return ok_status();
}

}  // namespace sniper
