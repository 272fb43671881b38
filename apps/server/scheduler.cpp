// SPDX-License-Identifier: MIT
#include "server/scheduler.h"

#include <algorithm>
#include <limits>

#include "engine/generate.h"

namespace sniper::server {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

// Cells the session's history shares with the job's prompt (media compared by hash).
int64_t shared_cells(const Session& session, const Job& job) {
  if (job.media != nullptr) return session.common_prefix(job.media->prompt);
  return static_cast<int64_t>(common_prefix(session.history(), job.prompt));
}

}  // namespace

Scheduler::Scheduler(Model& model, const Tokenizer& tokenizer, const SchedulerOptions& options, Metrics* metrics)
    : model_(model), tokenizer_(tokenizer), options_(options), metrics_(metrics) {}

Result<std::unique_ptr<Scheduler>> Scheduler::create(Model& model, const Tokenizer& tokenizer,
                                                     const SchedulerOptions& options, Metrics* metrics) {
  if (options.n_slots < 1 || options.n_slots > 256) {
    return make_error("--slots is %d but must be in [1, 256]", options.n_slots);
  }
  if (options.queue_capacity < 0 || options.queue_capacity > 65536) {
    return make_error("--queue is %d but must be in [0, 65536]", options.queue_capacity);
  }
  std::unique_ptr<Scheduler> s(new Scheduler(model, tokenizer, options, metrics));
  s->slots_.resize(static_cast<size_t>(options.n_slots));
  for (Slot& slot : s->slots_) {
    auto session = Session::create(model, options.session);
    if (!session.ok()) return session.error();
    slot.session = std::move(session).value();
  }
  s->n_ctx_ = s->slots_[0].session->n_ctx();
  if (int(options.spec_ngram_size > 0) + int(options.draft_model != nullptr) + int(options.spec_mtp) > 1) {
    return make_error("speculative decoding takes one draft source: n-gram lookup, a draft model or the MTP head");
  }
  if (options.context_shift && (options.spec_ngram_size > 0 || options.draft_model != nullptr || options.spec_mtp)) {
    return make_error("--context-shift with speculative decoding (--spec-type) is not supported: drop one of them");
  }
  if (options.spec_ngram_size > 0) {
    SNIPER_TRY(options.spec.validate());
    if (options.spec_ngram_size > 64)
      return make_error("--spec-ngram-size-n is %ld but must be in [1, 64]",
                        static_cast<long>(options.spec_ngram_size));
    s->ngram_ = std::make_unique<NgramDraft>(options.spec_ngram_size);
    // The checks a job would otherwise fail on (checkpoints for a hybrid state, the batch).
    auto probe = SpeculativeDecoder::create(*s->slots_[0].session, *s->ngram_, options.spec);
    if (!probe.ok()) return probe.error();
  }
  if (options.draft_model != nullptr) {
    SNIPER_TRY(options.spec.validate());
    const auto target_vocab = static_cast<int32_t>(model.config().vocab_size);
    SamplerConfig greedy;  // each job sets its own (start_job)
    greedy.temperature = 0;
    for (Slot& slot : s->slots_) {
      auto draft = DraftModel::create(*options.draft_model, s->n_ctx_, options.session.n_threads, target_vocab, greedy);
      if (!draft.ok()) return draft.error();
      slot.draft = std::move(draft).value();
      slot.draft->set_p_min(options.spec.p_min);
    }
    auto probe = SpeculativeDecoder::create(*s->slots_[0].session, *s->slots_[0].draft, options.spec);
    if (!probe.ok()) return probe.error();
  }
  if (options.spec_mtp) {
    SNIPER_TRY(options.spec.validate());
    SamplerConfig greedy;  // each job sets its own (start_job)
    greedy.temperature = 0;
    for (Slot& slot : s->slots_) {
      auto mtp = MtpDraft::create(model, *slot.session, greedy);
      if (!mtp.ok()) return mtp.error();
      slot.mtp = std::move(mtp).value();
      slot.mtp->set_p_min(options.spec.p_min);
    }
    auto probe = SpeculativeDecoder::create(*s->slots_[0].session, *s->slots_[0].mtp, options.spec);
    if (!probe.ok()) return probe.error();
  }
  s->batch_ = std::max<int64_t>(1, options.session.batch);
  // One pass holds every decoding slot's token (or verification rows) and prompt chunks up to the budget.
  auto batcher = BatchEvaluator::create(model, pass_rows(s->batch_, options.n_slots, options.pass_rows_per_slot()),
                                        s->n_ctx_, options.session.routing_bias, s->slots_[0].session->pool(),
                                        options.session.remote_experts);
  if (!batcher.ok()) return batcher.error();
  s->batcher_ = std::move(batcher).value();
  if (metrics != nullptr) metrics->set_slots(options.n_slots, 0, 0);
  s->thread_ = std::thread([p = s.get()] { p->loop(); });
  return s;
}

Scheduler::~Scheduler() { stop(); }

bool Scheduler::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    const int64_t idle = static_cast<int64_t>(slots_.size()) - busy_;
    if (static_cast<int64_t>(queue_.size()) >= options_.queue_capacity + idle) return false;
    job->submitted = std::chrono::steady_clock::now();
    queue_.push_back(job);
    if (metrics_ != nullptr)
      metrics_->set_slots(static_cast<int64_t>(slots_.size()), busy_, static_cast<int64_t>(queue_.size()));
  }
  cv_.notify_all();
  return true;
}

void Scheduler::stop() {
  std::lock_guard<std::mutex> stop_lock(stop_mu_);  // one caller joins; the others wait for it
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t Scheduler::busy_slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

int64_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

void Scheduler::loop() {
  for (;;) {
    std::vector<std::pair<Slot*, std::shared_ptr<Job>>> starts;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!stopping_ && busy_ == 0 && queue_.empty()) cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      // Assign queued jobs to idle slots, first come first served.
      while (!queue_.empty()) {
        const std::shared_ptr<Job>& job = queue_.front();
        // The idle slot sharing the longest prefix with the prompt, when that prefix covers at
        // least half of the slot's history (a shared BOS alone must not evict a useful cache);
        // otherwise the least recently used idle slot.
        Slot* best = nullptr;
        Slot* lru = nullptr;
        size_t best_prefix = 0;
        for (Slot& slot : slots_) {
          if (slot.job != nullptr) continue;
          bool taken = false;
          for (auto& [s, j] : starts) taken = taken || s == &slot;
          if (taken) continue;
          if (lru == nullptr || slot.last_used < lru->last_used) lru = &slot;
          if (job->kind == JobKind::kLoad || job->kind == JobKind::kEmbed) continue;
          // What the slot can keep of the shared prefix: all of it, or for a hybrid model the
          // latest state checkpoint at or before it.
          const size_t prefix = static_cast<size_t>(slot.session->reusable_prefix(shared_cells(*slot.session, *job)));
          if (prefix == 0 || 2 * prefix < slot.session->history().size()) continue;
          if (best == nullptr || prefix > best_prefix) {
            best = &slot;
            best_prefix = prefix;
          }
        }
        if (best == nullptr) best = lru;
        if (best == nullptr) break;
        starts.emplace_back(best, job);
        queue_.pop_front();
        ++busy_;
      }
      if (metrics_ != nullptr)
        metrics_->set_slots(static_cast<int64_t>(slots_.size()), busy_, static_cast<int64_t>(queue_.size()));
    }
    for (auto& [slot, job] : starts) start_job(*slot, job);
    step();
    publish_engine_stats();
  }
  // Shutting down: end everything that is running or waiting.
  for (Slot& slot : slots_) {
    if (slot.job != nullptr) finish(slot, "the server is shutting down", 503);
  }
  std::deque<std::shared_ptr<Job>> rest;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rest.swap(queue_);
  }
  for (auto& job : rest) {
    JobResult r;
    r.error = "the server is shutting down";
    r.error_status = 503;
    job->finish(std::move(r));
  }
}

void Scheduler::start_job(Slot& slot, std::shared_ptr<Job> job) {
  slot.job = std::move(job);
  slot.result = JobResult();
  slot.result.slot = static_cast<int>(&slot - slots_.data());
  slot.t_start = std::chrono::steady_clock::now();
  slot.sampled = false;
  if (metrics_ != nullptr) {
    metrics_->record_latency(Latency::kQueue,
                             std::chrono::duration<double>(slot.t_start - slot.job->submitted).count());
  }
  slot.decoding = false;
  slot.to_eval.clear();
  slot.to_eval_spans.clear();
  slot.to_eval_media.clear();
  slot.next_span = 0;
  slot.eval_pos = 0;
  Job& j = *slot.job;
  Session& session = *slot.session;
  if (j.kind == JobKind::kLoad) {
    // The slot's old state goes first, whatever happens: a load that fails leaves an empty slot,
    // never a mix of two states (the values of a loaded state were checked when it was parsed).
    (void)session.truncate(0);
    Status st = check_compatible(*j.load, session, options_.model_fingerprint);
    if (!st.ok()) return finish(slot, st.error().message, 409);
    restore_session_state(*j.load, session);
    slot.result.n_prompt = j.load->n_tokens();
    slot.result.prompt_ms = ms_since(slot.t_start);
    return finish(slot);
  }
  if (j.prompt.empty()) return finish(slot, "the prompt is empty", 400);
  if (static_cast<int64_t>(j.prompt.size()) > session.n_ctx()) {
    return finish(slot, "the prompt is longer than the context", 400);
  }
  size_t common = static_cast<size_t>(shared_cells(session, j));
  if (common == j.prompt.size()) --common;  // evaluate at least one token for fresh logits
  if (j.kind == JobKind::kEmbed) {
    // Every row is pooled: the session starts over, and the pooler sees each chunk.
    common = 0;
    slot.pooler = std::make_unique<EmbeddingPooler>(j.pooling, model_.config().dim, session.observer());
    session.set_observer(slot.pooler.get());
  }
  // A hybrid model's recurrent state cannot be rewound: truncate() goes back to the latest state
  // checkpoint at or before the shared prefix (0 without one) and the rest is evaluated again. A
  // media chunk is kept whole or not at all (truncate() never stops inside one).
  common = static_cast<size_t>(session.truncate(static_cast<int64_t>(common)));
  slot.to_eval.assign(j.prompt.begin() + static_cast<long>(common), j.prompt.end());
  if (j.media != nullptr) {
    auto fresh = slice_prompt(j.media->prompt, static_cast<int64_t>(common), j.media->prompt.n_cells());
    if (!fresh.ok()) return finish(slot, fresh.error().message, 500);
    slot.to_eval_spans = fresh->spans;
    for (const PromptPiece& piece : fresh->pieces) {
      if (piece.media != nullptr) slot.to_eval_media.push_back(piece.media);
    }
  }
  // The next turn of a conversation usually shares this prompt up to its generation prompt:
  // checkpoint kPromptCheckpointTail tokens before its end (before a media chunk that this would cut).
  slot.checkpoint_at = 0;
  constexpr size_t kTail = static_cast<size_t>(kPromptCheckpointTail);
  if (session.keeps_checkpoints() && slot.to_eval.size() > kTail) {
    slot.checkpoint_at = slot.to_eval.size() - kTail;
    for (const MediaSpan& span : slot.to_eval_spans) {
      if (static_cast<int64_t>(slot.checkpoint_at) > span.start &&
          static_cast<int64_t>(slot.checkpoint_at) < span.end())
        slot.checkpoint_at = static_cast<size_t>(span.start);
    }
  }
  slot.result.n_prompt = static_cast<int64_t>(j.prompt.size());
  slot.result.n_cached = static_cast<int64_t>(common);
  if (j.kind == JobKind::kGenerate) {
    auto gen = Generator::create(tokenizer_, j.generator);
    if (!gen.ok()) return finish(slot, gen.error().message, 400);
    slot.generator.emplace(std::move(gen).value());
    if (j.media != nullptr) {
      for (const PromptPiece& piece : j.media->prompt.pieces) slot.generator->accept_prompt(piece.tokens);
    } else {
      slot.generator->accept_prompt(j.prompt);
    }
    slot.spec.reset();
    slot.pending = -1;
    DraftSource* source = ngram_ != nullptr     ? static_cast<DraftSource*>(ngram_.get())
                          : slot.mtp != nullptr ? static_cast<DraftSource*>(slot.mtp.get())
                                                : slot.draft.get();
    if (source != nullptr && !slot.generator->constrained()) {  // a grammar masks each token: no drafts
      if (slot.draft != nullptr) {  // the draft samples as this job does (greedy stays greedy)
        Status st = slot.draft->set_sampler(j.generator.sampler);
        if (!st.ok()) return finish(slot, st.error().message, 400);
      }
      if (slot.mtp != nullptr) {
        Status st = slot.mtp->set_sampler(j.generator.sampler);
        if (!st.ok()) return finish(slot, st.error().message, 400);
      }
      auto spec = SpeculativeDecoder::create(session, *source, options_.spec);
      if (!spec.ok()) return finish(slot, spec.error().message, 500);
      slot.spec.emplace(std::move(spec).value());
      slot.result.speculative = true;
    }
    slot.n_keep = resolve_n_keep(options_.n_keep, j.prompt, tokenizer_.bos_id());
  }
}

void Scheduler::step() {
  enum class Kind { kDecode, kVerify, kPrefill };
  struct Work {
    Slot* slot = nullptr;
    std::vector<int32_t> tokens;
    Kind kind = Kind::kDecode;
  };
  std::vector<Work> work;
  std::vector<bool> solo(slots_.size(), false);
  int64_t rows = 0;  // decode and verification rows so far
  // Cancelled jobs end before the pass; slots that cannot batch run on their own; every other
  // decoding slot brings its next token (its row in the pass), a speculative one its pending
  // token and drafts (its verification rows).
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.job == nullptr) continue;
    if (slot.job->cancelled()) {
      slot.result.finish_reason = "cancelled";
      finish(slot);
      continue;
    }
    // A prompt with media still to evaluate goes on alone: a media chunk is evaluated whole, in
    // its own call (its rows attend within it both ways for gemma4v), and the text around it in
    // chunks that stop at it.
    const bool media_pending = !slot.decoding && slot.next_span < slot.to_eval_spans.size();
    if (media_pending || !slot.session->batchable()) {
      solo[i] = true;
      advance(slot);
      continue;
    }
    if (!slot.decoding) continue;
    int32_t token = -1;
    if (!slot.spec) {
      if (sample_next(slot, &token)) {
        work.push_back({&slot, {token}, Kind::kDecode});
        ++rows;
      }
      continue;
    }
    if (slot.pending < 0) {  // the first token after the prompt
      if (!sample_next(slot, &token)) continue;
      slot.pending = token;
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto verify = slot.spec->begin(*slot.session, slot.pending, remaining_tokens(slot));
    slot.result.decode_ms += ms_since(t0);
    if (!verify.ok()) {
      finish(slot, verify.error().message, 500);
      continue;
    }
    const int64_t n = static_cast<int64_t>(verify->size());
    if (n > batcher_->max_seq_rows() || rows + n > batcher_->max_rows()) {
      // More rows than a pass takes from one sequence (a sliding ring), or than are left in
      // this one: the slot verifies on its own, with the same result.
      solo[i] = true;
      std::vector<float> logits;
      const auto t1 = std::chrono::steady_clock::now();
      Status st = slot.session->eval(*verify, &logits);
      slot.result.decode_ms += ms_since(t1);
      if (!st.ok()) {
        finish(slot, st.error().message, 500);
        continue;
      }
      finish_verification(slot, logits);
      continue;
    }
    work.push_back({&slot, std::vector<int32_t>(verify->begin(), verify->end()), Kind::kVerify});
    rows += n;
  }
  // Prompt chunks up to the budget, the prefilling slots taking turns at going first: what the
  // decoding slots leave of it, one row each (a slot's drafts come on top, as when it verified
  // alone, so speculation does not slow other prompts down), at least one token while the pass
  // has room.
  const int64_t decoding = static_cast<int64_t>(work.size());
  int64_t budget = std::min(batcher_->max_rows() - rows, std::max<int64_t>(1, batch_ - decoding));
  const size_t n_slots = slots_.size();
  for (size_t k = 0; k < n_slots && budget > 0; ++k) {
    const size_t i = (prefill_turn_ + k) % n_slots;
    Slot& slot = slots_[i];
    if (slot.job == nullptr || solo[i] || slot.decoding) continue;
    size_t n = std::min(static_cast<size_t>(budget), slot.to_eval.size() - slot.eval_pos);
    if (slot.eval_pos < slot.checkpoint_at) n = std::min(n, slot.checkpoint_at - slot.eval_pos);
    n = std::min(n, static_cast<size_t>(batcher_->max_seq_rows()));
    work.push_back({&slot,
                    std::vector<int32_t>(slot.to_eval.begin() + static_cast<long>(slot.eval_pos),
                                         slot.to_eval.begin() + static_cast<long>(slot.eval_pos + n)),
                    Kind::kPrefill});
    budget -= static_cast<int64_t>(n);
  }
  if (n_slots > 0) prefill_turn_ = (prefill_turn_ + 1) % n_slots;
  // A job whose tokens the session refuses (its context) ends alone, before the pass.
  std::vector<BatchItem> items;
  std::vector<Work*> in_pass;
  for (Work& w : work) {
    Status st = w.slot->session->check_eval(w.tokens);
    if (!st.ok()) {
      finish(*w.slot, st.error().message, 500);
      continue;
    }
    items.push_back({w.slot->session.get(), w.tokens, w.kind == Kind::kVerify});
    in_pass.push_back(&w);
  }
  if (items.empty()) return;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = batcher_->eval(items);
  const double ms = ms_since(t0);
  for (Work* w : in_pass) (w->kind == Kind::kPrefill ? w->slot->result.prompt_ms : w->slot->result.decode_ms) += ms;
  if (!st.ok()) {
    for (Work* w : in_pass) finish(*w->slot, st.error().message, 500);
    return;
  }
  if (metrics_ != nullptr) {
    int64_t n_rows = 0;
    for (const BatchItem& it : items) n_rows += static_cast<int64_t>(it.tokens.size());
    metrics_->add_pass(n_rows, static_cast<int64_t>(items.size()));
  }
  for (size_t i = 0; i < in_pass.size(); ++i) {
    Work* w = in_pass[i];
    if (w->kind == Kind::kPrefill) prefill_done(*w->slot, w->tokens.size());
    if (w->kind == Kind::kVerify) finish_verification(*w->slot, batcher_->logits(i));
  }
}

int64_t Scheduler::remaining_tokens(const Slot& slot) const {
  const int64_t n_predict = slot.job->generator.n_predict;
  return n_predict < 0 ? -1 : n_predict - slot.generator->n_generated();
}

bool Scheduler::sample_next(Slot& slot, int32_t* token) {
  Job& j = *slot.job;
  Session& session = *slot.session;
  const int32_t n_vocab = static_cast<int32_t>(model_.config().vocab_size);
  // With context shift the context never ends generation.
  const int64_t n_ctx = options_.context_shift ? std::numeric_limits<int64_t>::max() : session.n_ctx();
  GeneratorStep step = slot.generator->step(session.last_logits().data(), n_vocab, session.n_past(), n_ctx);
  if (step.token >= 0) note_token(slot);
  if (!step.text.empty()) {
    if (slot.result.ttft_ms < 0) slot.result.ttft_ms = ms_since(slot.t_start);
    j.push_text(step.text);
  }
  slot.result.n_generated = slot.generator->n_generated();
  if (step.done) {
    slot.result.finish_reason = step.finish_reason == "eog"       ? "stop"
                                : step.finish_reason == "context" ? "length"
                                                                  : step.finish_reason;
    slot.result.stop_string = step.stop_string;
    finish(slot);
    return false;
  }
  if (options_.context_shift && session.n_past() + 1 >= session.n_ctx()) {
    const auto t0 = std::chrono::steady_clock::now();
    Status st = shift_full_context(session, slot.n_keep);
    slot.result.decode_ms += ms_since(t0);
    if (!st.ok()) {
      finish(slot, st.error().message, 500);
      return false;
    }
  }
  *token = step.token;
  return true;
}

void Scheduler::prefill_done(Slot& slot, size_t n) {
  Session& session = *slot.session;
  if (slot.eval_pos + n == slot.checkpoint_at) session.checkpoint();
  slot.eval_pos += n;
  if (slot.eval_pos < slot.to_eval.size()) return;
  if (slot.job->kind == JobKind::kEmbed) {
    slot.result.embedding = slot.pooler->result();
    return finish(slot);
  }
  if (slot.job->kind == JobKind::kSave) {
    session.checkpoint();  // a saved prompt is a prefix the next requests come back to
    slot.result.state = std::make_shared<SessionState>(capture_session_state(session, options_.model_fingerprint));
    return finish(slot);
  }
  slot.decoding = true;
}

void Scheduler::advance(Slot& slot) {
  Session& session = *slot.session;
  if (!slot.decoding) {
    size_t n = std::min(static_cast<size_t>(batch_), slot.to_eval.size() - slot.eval_pos);
    if (slot.eval_pos < slot.checkpoint_at) n = std::min(n, slot.checkpoint_at - slot.eval_pos);
    const MediaSpan* span = slot.next_span < slot.to_eval_spans.size() ? &slot.to_eval_spans[slot.next_span] : nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    Status st = ok_status();
    if (span != nullptr && static_cast<int64_t>(slot.eval_pos) == span->start) {
      st = session.eval_media(*slot.to_eval_media[slot.next_span]);  // a media chunk goes in whole
      n = static_cast<size_t>(span->n_tokens);
      ++slot.next_span;
    } else {
      if (span != nullptr) n = std::min(n, static_cast<size_t>(span->start) - slot.eval_pos);
      st = session.eval(std::span<const int32_t>(slot.to_eval.data() + slot.eval_pos, n));
    }
    slot.result.prompt_ms += ms_since(t0);
    if (!st.ok()) return finish(slot, st.error().message, 500);
    prefill_done(slot, n);
    if (!slot.decoding) return;  // more prompt, or the job ended
  }
  if (slot.spec && slot.pending >= 0) return advance_speculative(slot);
  int32_t token = -1;
  if (!sample_next(slot, &token)) return;
  if (slot.spec) {
    slot.pending = token;  // the next turn verifies it with drafts
    return;
  }
  const int32_t next[1] = {token};
  const auto t0 = std::chrono::steady_clock::now();
  Status st = session.eval(next);
  slot.result.decode_ms += ms_since(t0);
  if (!st.ok()) return finish(slot, st.error().message, 500);
}

void Scheduler::advance_speculative(Slot& slot) {
  speculative_steps(slot, [&](const std::function<void(const GeneratorStep&)>& on_step) {
    return slot.spec->round(*slot.session, *slot.generator, slot.pending, remaining_tokens(slot), on_step);
  });
}

void Scheduler::finish_verification(Slot& slot, std::span<const float> logits) {
  speculative_steps(slot, [&](const std::function<void(const GeneratorStep&)>& on_step) {
    return slot.spec->finish(*slot.session, *slot.generator, logits, on_step);
  });
}

void Scheduler::speculative_steps(
    Slot& slot, const std::function<Status(const std::function<void(const GeneratorStep&)>&)>& decide) {
  Job& j = *slot.job;
  std::string finish_reason;
  const auto t0 = std::chrono::steady_clock::now();
  Status st = decide([&](const GeneratorStep& step) {
    if (!finish_reason.empty()) return;
    if (step.token >= 0) note_token(slot);
    if (!step.text.empty()) {
      if (slot.result.ttft_ms < 0) slot.result.ttft_ms = ms_since(slot.t_start);
      j.push_text(step.text);
    }
    slot.pending = step.token;
    if (step.done) finish_reason = step.finish_reason;
  });
  slot.result.decode_ms += ms_since(t0);
  slot.result.n_generated = slot.generator->n_generated();
  slot.result.n_drafted = slot.spec->stats().n_drafted;
  slot.result.n_accepted = slot.spec->stats().n_accepted;
  if (!st.ok()) return finish(slot, st.error().message, 500);
  if (!finish_reason.empty()) {
    slot.result.finish_reason = finish_reason == "eog" ? "stop" : finish_reason == "context" ? "length" : finish_reason;
    return finish(slot);
  }
}

void Scheduler::note_token(Slot& slot) {
  const auto now = std::chrono::steady_clock::now();
  if (metrics_ != nullptr) {
    if (slot.sampled) {
      metrics_->record_latency(Latency::kInterToken, std::chrono::duration<double>(now - slot.t_token).count());
    } else {
      metrics_->record_latency(Latency::kFirstToken, std::chrono::duration<double>(now - slot.job->submitted).count());
    }
  }
  slot.t_token = now;
  slot.sampled = true;
}

void Scheduler::finish(Slot& slot, const std::string& error, int error_status) {
  JobResult r = std::move(slot.result);
  if (!error.empty()) {
    r.error = error;
    r.error_status = error_status;
  }
  if (metrics_ != nullptr && slot.job->kind == JobKind::kGenerate) {
    metrics_->add_prompt_tokens(r.n_prompt, r.n_cached);
    metrics_->add_generated_tokens(r.n_generated);
    metrics_->add_draft_tokens(r.n_drafted, r.n_accepted);
    RequestTimings t;
    t.n_prompt_evaluated = r.n_prompt - r.n_cached;
    t.prompt_ms = r.prompt_ms;
    t.n_decoded = std::max<int64_t>(0, r.n_generated - 1);
    t.decode_ms = r.decode_ms;
    t.ttft_ms = r.ttft_ms;
    metrics_->record_timings(t);
  }
  if (slot.pooler != nullptr) {
    slot.session->set_observer(slot.pooler->next());
    slot.pooler.reset();
  }
  if (!r.error.empty()) {
    // A failed pass may have left rows half-written: forget the slot's history.
    (void)slot.session->truncate(0);
  }
  // Free the slot (and its gauge) before the result is published: a client that has read the
  // whole response and then asks /metrics must find the slot idle.
  std::shared_ptr<Job> job = std::move(slot.job);
  slot.generator.reset();
  slot.spec.reset();
  slot.pending = -1;
  slot.to_eval.clear();
  slot.to_eval_spans.clear();
  slot.to_eval_media.clear();
  slot.last_used = ++clock_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
    if (metrics_ != nullptr)
      metrics_->set_slots(static_cast<int64_t>(slots_.size()), busy_, static_cast<int64_t>(queue_.size()));
  }
  job->finish(std::move(r));
}

void Scheduler::publish_engine_stats() {
  if (metrics_ == nullptr) return;
  EngineSnapshot s;
  if (ExpertCache* cache = model_.expert_cache()) {
    const LayerCacheStats t = cache->stats().total();
    s.expert_hits = t.hits;
    s.expert_requests = t.requests;
  }
  if (IoEngine* io = model_.io()) {
    s.ssd_read_bytes = io->stats().bytes_read;
    s.io_in_flight = io->n_outstanding();
  }
  if (batcher_ != nullptr) {
    s.experts_read = batcher_->routing_stats().experts_read;
    s.experts_per_sequence = batcher_->routing_stats().experts_per_sequence;
  }
  for (const Slot& slot : slots_) {
    s.experts_read += slot.session->routing_stats().experts_read;  // the passes slots run alone
    s.experts_per_sequence += slot.session->routing_stats().experts_per_sequence;
    s.state_checkpoints += static_cast<uint64_t>(slot.session->n_checkpoints());
    s.state_checkpoint_bytes += slot.session->checkpoint_bytes();
    if (slot.draft != nullptr) {
      s.state_checkpoints += static_cast<uint64_t>(slot.draft->session().n_checkpoints());
      s.state_checkpoint_bytes += slot.draft->session().checkpoint_bytes();
    }
  }
  metrics_->set_engine(s);
}

}  // namespace sniper::server
