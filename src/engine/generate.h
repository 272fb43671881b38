// SPDX-License-Identifier: MIT
// The generate loop: evaluate a prompt, then sample, stream text and feed tokens back until
// n_predict tokens, an end-of-generation token, a stop string, or the callback says stop.
// This is the only place where model, KV cache, tokenizer and sampler meet.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/session.h"
#include "engine/speculative.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace sniper {

// Sees a prompt's evaluation after each chunk: tokens evaluated so far and in all. Returning false
// stops it there (the chunks evaluated so far stay in the session).
using PromptProgress = std::function<bool(int64_t done, int64_t total)>;

struct GenerateOptions {
  int64_t n_predict = 128;  // -1: until end of generation or the context is full
  SamplerConfig sampler;
  bool stop_at_eog = true;        // stop on the tokenizer's end-of-generation tokens
  std::vector<std::string> stop;  // stop strings (not emitted)
  DraftSource* draft = nullptr;   // non-null: speculative decoding (engine/speculative.h)
  SpecConfig spec;                // with `draft`
  // --context-shift (llama.cpp's semantics, shift_full_context): when the next token would
  // fill the context, keep the first n_keep tokens (resolve_n_keep) and drop half of the rest,
  // so generation goes on past the context. Off: a full context ends generation ("context").
  bool context_shift = false;
  int64_t n_keep = 0;
  // Non-empty: the prompt is evaluated through eval_with_progress; a false return ends the call
  // with finish_reason "cancelled" before any token is sampled (n_prompt counts what was evaluated).
  PromptProgress on_prompt_progress;
};

struct GenerateStats {
  int64_t n_prompt = 0;
  double prompt_ms = 0;
  int64_t n_gen = 0;
  double gen_ms = 0;          // wall time from the first sample to the last
  int64_t n_decode = 0;       // tokens decoded (evaluated after the prompt)
  double decode_ms = 0;       // time decoding them (speculative: drafting, verifying, rollback)
  double ttft_ms = 0;         // prompt evaluation to first token text
  std::string finish_reason;  // "length", "stop", "eog", "context", "cancelled"
  SpecStats spec;             // with a draft source: drafted / accepted tokens, rounds
  int64_t n_shifts = 0;       // context shifts done (GenerateOptions::context_shift)
  double prompt_tok_s() const { return prompt_ms > 0 ? n_prompt * 1000.0 / prompt_ms : 0; }
  double gen_tok_s() const { return decode_ms > 0 ? n_decode * 1000.0 / decode_ms : 0; }
};

// llama.cpp's --keep: keep < 0 or more than the prompt keeps the whole prompt; otherwise keep
// tokens plus the BOS token when the prompt starts with one (llama.cpp adds add_bos).
int64_t resolve_n_keep(int64_t keep, std::span<const int32_t> prompt, int32_t bos_id);

// llama.cpp's context shift when the context is full (tools/completion): n_discard =
// (n_past - n_keep) / 2 tokens after the first n_keep are forgotten (Session::shift_context).
// Errors: nothing to discard (n_keep covers the context), or a model that cannot shift.
[[nodiscard]] Status shift_full_context(Session& session, int64_t n_keep);

// Session::eval of `tokens` in the chunks it would take (Session::max_batch()), with `progress`
// called after each; the logits and the state equal one eval() call's. Returns true when every
// token was evaluated, false when `progress` stopped it first. Errors are eval()'s.
[[nodiscard]] Result<bool> eval_with_progress(Session& session, std::span<const int32_t> tokens,
                                              const PromptProgress& progress);

// The pieces of a prompt with media (engine/media_prompt.h) evaluated in order after what the
// session holds: text through eval_with_progress, media through Session::eval_media, `progress`
// called after each text chunk and each media chunk with the prompt's cells so far. Returns the
// cells evaluated: all of them, or fewer when `progress` stopped it (what was evaluated stays).
// Errors: a prompt past the context (before any piece is evaluated), eval()'s and eval_media()'s.
[[nodiscard]] Result<int64_t> eval_media_prompt(Session& session, const MediaPrompt& prompt,
                                                const PromptProgress& progress);

// Receives text as it becomes valid UTF-8; return false to stop generating.
using TextCallback = std::function<bool(std::string_view text)>;

// Evaluates `prompt` (appended to whatever the session already holds) and generates. Returns
// the stats; on_text sees the generated text only (not the prompt).
Result<GenerateStats> generate(Session& session, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                               const GenerateOptions& options, const TextCallback& on_text);
// The same for a prompt with media (engine/media_prompt.h): its pieces are evaluated in order
// after whatever the session holds (text through eval, media through eval_media); n_prompt
// counts its cells; the sampler's penalties see its text tokens only.
Result<GenerateStats> generate_media(Session& session, const Tokenizer& tokenizer, const MediaPrompt& prompt,
                                     const GenerateOptions& options, const TextCallback& on_text);

}  // namespace sniper
