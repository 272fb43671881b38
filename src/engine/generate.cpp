// SPDX-License-Identifier: MIT
#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>

#include "engine/generator.h"
#include "model/context_shift.h"

namespace sniper {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int64_t resolve_n_keep(int64_t keep, std::span<const int32_t> prompt, int32_t bos_id) {
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (keep < 0 || keep > n_prompt) return n_prompt;
  const bool bos = !prompt.empty() && bos_id >= 0 && prompt[0] == bos_id;
  return std::min(keep + (bos ? 1 : 0), n_prompt);
}

Status shift_full_context(Session& session, int64_t n_keep) {
  const int64_t n_discard = (session.n_past() - n_keep) / 2;
  if (n_discard < 1) {
    return make_error(
        "context full (%ld tokens) and --keep keeps %ld of them: nothing left to discard for the context "
        "shift (lower --keep or raise --ctx)",
        static_cast<long>(session.n_past()), static_cast<long>(n_keep));
  }
  return session.shift_context(n_keep, n_discard);
}

Result<bool> eval_with_progress(Session& session, std::span<const int32_t> tokens, const PromptProgress& progress) {
  if (!progress) {
    SNIPER_TRY(session.eval(tokens));
    return true;
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  // A prompt past the context is refused whole, before any chunk is evaluated (eval()'s message).
  if (session.n_past() + n > session.n_ctx()) {
    SNIPER_TRY(session.eval(tokens));
    return true;
  }
  const int64_t batch = session.max_batch();
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t m = std::min(batch, n - start);
    SNIPER_TRY(session.eval(tokens.subspan(static_cast<size_t>(start), static_cast<size_t>(m))));
    if (!progress(start + m, n) && start + m < n) return false;
  }
  return true;
}

Result<int64_t> eval_media_prompt(Session& session, const MediaPrompt& prompt, const PromptProgress& progress) {
  const int64_t n_prompt = prompt.n_cells();
  const int64_t n_before = session.n_past();
  if (n_before + n_prompt > session.n_ctx()) {
    const ModelConfig& c = session.model().config();
    return make_error(
        "context limit: %ld tokens already in context + %ld new = %ld, but the context holds %ld "
        "(raise it with --ctx, up to the model's %ld)",
        static_cast<long>(n_before), static_cast<long>(n_prompt), static_cast<long>(n_before + n_prompt),
        static_cast<long>(session.n_ctx()), static_cast<long>(c.n_ctx_train));
  }
  int64_t done = 0;
  bool stop = false;  // `progress` said stop
  for (const PromptPiece& piece : prompt.pieces) {
    if (stop) break;
    if (piece.media != nullptr) {
      SNIPER_TRY(session.eval_media(*piece.media));
      done += piece.media->n_tokens();
      if (progress && !progress(done, n_prompt)) stop = true;
    } else if (!piece.tokens.empty()) {
      PromptProgress chunk_progress;
      if (progress) {
        chunk_progress = [&](int64_t d, int64_t) {
          if (!progress(done + d, n_prompt)) stop = true;
          return !stop;
        };
      }
      SNIPER_ASSIGN_OR_RETURN(bool whole, eval_with_progress(session, piece.tokens, chunk_progress));
      if (!whole) break;
      done += static_cast<int64_t>(piece.tokens.size());
    }
  }
  return session.n_past() - n_before;
}

Result<GenerateStats> generate(Session& session, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                               const GenerateOptions& options, const TextCallback& on_text) {
  return generate_media(session, tokenizer, text_prompt(prompt), options, on_text);
}

Result<GenerateStats> generate_media(Session& session, const Tokenizer& tokenizer, const MediaPrompt& prompt,
                                     const GenerateOptions& options, const TextCallback& on_text) {
  GeneratorOptions go;
  go.n_predict = options.n_predict;
  go.sampler = options.sampler;
  go.stop_at_eog = options.stop_at_eog;
  go.stop = options.stop;
  SNIPER_ASSIGN_OR_RETURN(Generator gen, Generator::create(tokenizer, go));
  std::optional<SpeculativeDecoder> spec;
  if (options.draft != nullptr) {
    SNIPER_ASSIGN_OR_RETURN(SpeculativeDecoder d, SpeculativeDecoder::create(session, *options.draft, options.spec));
    spec.emplace(std::move(d));
  }

  GenerateStats stats;
  stats.n_prompt = prompt.n_cells();
  for (const PromptPiece& piece : prompt.pieces) gen.accept_prompt(piece.tokens);
  if (options.context_shift) {
    SNIPER_TRY(context_shift_support(session.model().config()));
    if (spec) {
      return make_error(
          "--context-shift with speculative decoding is not supported: drop one of them (a verification "
          "batch would have to be shifted mid-round)");
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t n_prompt = prompt.n_cells();
  // llama.cpp shifts once when what it is about to evaluate reaches the end of the context.
  if (options.context_shift && n_prompt > 0 && session.n_past() + n_prompt >= session.n_ctx() &&
      session.n_past() > options.n_keep + 1) {
    SNIPER_TRY(shift_full_context(session, options.n_keep));
    ++stats.n_shifts;
  }
  SNIPER_ASSIGN_OR_RETURN(int64_t evaluated, eval_media_prompt(session, prompt, options.on_prompt_progress));
  if (evaluated < n_prompt) {
    stats.prompt_ms = ms_since(t0);
    stats.n_prompt = evaluated;
    stats.finish_reason = "cancelled";
    return stats;
  }
  stats.prompt_ms = ms_since(t0);
  if (session.n_past() == 0) return make_error("nothing to generate from: the prompt is empty");

  const auto t_gen = std::chrono::steady_clock::now();
  const int32_t n_vocab = static_cast<int32_t>(session.model().config().vocab_size);
  bool first_text = true;
  // With context shift the context never ends generation.
  const int64_t gen_ctx = options.context_shift ? std::numeric_limits<int64_t>::max() : session.n_ctx();
  // Returns false when generation is over (done or cancelled).
  auto emit = [&](const GeneratorStep& step) {
    if (!step.text.empty()) {
      if (first_text) {
        stats.ttft_ms = ms_since(t0);
        first_text = false;
      }
      if (on_text && !on_text(step.text) && !step.done) {
        stats.finish_reason = "cancelled";
        return false;
      }
    }
    if (step.done) {
      stats.finish_reason = step.finish_reason;
      return false;
    }
    return true;
  };
  GeneratorStep step = gen.step(session.last_logits().data(), n_vocab, session.n_past(), gen_ctx);
  bool going = emit(step);
  int32_t pending = step.token;
  while (going) {
    if (options.context_shift && session.n_past() + 1 >= session.n_ctx()) {
      SNIPER_TRY(shift_full_context(session, options.n_keep));
      ++stats.n_shifts;
    }
    const auto t_step = std::chrono::steady_clock::now();
    const int64_t n_past_before = session.n_past();
    if (spec) {
      const int64_t remaining = options.n_predict < 0 ? -1 : options.n_predict - gen.n_generated();
      SNIPER_TRY(spec->round(session, gen, pending, remaining, [&](const GeneratorStep& s) {
        pending = s.token;
        if (going) going = emit(s);
      }));
    } else {
      const int32_t next[1] = {pending};
      SNIPER_TRY(session.eval(next));
      step = gen.step(session.last_logits().data(), n_vocab, session.n_past(), gen_ctx);
      pending = step.token;
      going = emit(step);
    }
    stats.decode_ms += ms_since(t_step);
    stats.n_decode += session.n_past() - n_past_before;
  }
  if (spec) stats.spec = spec->stats();
  stats.n_gen = gen.n_generated();
  stats.gen_ms = ms_since(t_gen);
  return stats;
}

}  // namespace sniper
