// SPDX-License-Identifier: MIT
// The speculative-decoding flags shared by run, chat, bench and serve: the draft source (--spec-type,
// -md/--model-draft with its own --mem-draft share of --mem), --draft-max / --draft-min, the
// n-gram size, adaptive draft length. Parsing happens before the target loads (the draft's memory
// share comes off the target's budget); setup after (the draft model needs the target's
// vocabulary and context). Nonsense combinations are Errors naming the flags.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "common.h"
#include "engine/draft_source.h"
#include "engine/speculative.h"

namespace sniper::cli {

// --spec-type, -md, --mem-draft, --draft-max, --draft-min, --spec-ngram-size-n, --no-draft-adaptive
std::vector<FlagSpec> spec_flags();

enum class SpecKind { kNone, kNgram, kDraftModel, kMtp };

struct SpecRequest {
  SpecKind kind = SpecKind::kNone;
  SpecConfig config;
  std::string draft_path;        // kDraftModel
  uint64_t draft_mem_bytes = 0;  // kDraftModel: its budget (taken off --mem); 0 = unlimited
  int64_t ngram_size = 0;        // kNgram
  bool enabled() const { return kind != SpecKind::kNone; }
  // Checkpoints a session needs for rollback on a model that cannot rewind (hybrid, sliding).
  int64_t checkpoints() const { return enabled() ? 2 : 0; }
  // Rows of logits a session and its decoder hold at once (PlanRequest::n_logit_rows): the last
  // token's, plus a verification pass's draft_max + 1.
  int64_t logit_rows() const { return enabled() ? config.draft_max + 2 : 1; }
};

// "none", "ngram", "draft" or "mtp"; an Error names the value otherwise.
Result<SpecKind> parse_spec_kind(const std::string& type);
// --spec-type mtp needs a first MTP block this engine runs (the qwen35 family's): an Error names
// the key when the file has none, or the architecture when its blocks are not supported.
Status check_mtp_supported(const GgufFile& file, const ModelConfig& config);

// Validates the flags (before loading anything). Errors: an unknown --spec-type, draft flags with
// no draft source, -md with another --spec-type, --draft-min > --draft-max, negative values,
// --mem-draft not below --mem.
Result<SpecRequest> parse_spec_args(const Args& args);

// Loads req's draft model for `target` (kDraftModel): the vocabulary is checked first (a draft
// that cannot serve this target is refused before it loads), then the draft loads with its own
// --mem-draft budget (0: unlimited, resident), planned for n_sessions sequences of n_ctx tokens
// (a server plans one per slot) with the checkpoints rollback needs. Errors name the draft's
// path and the first vocabulary difference or the load failure.
Result<std::unique_ptr<Model>> load_draft_model(const SpecRequest& req, const Model& target, int64_t n_ctx,
                                                int64_t n_sessions);

struct SpecSetup {
  std::unique_ptr<Model> draft_model;   // kDraftModel
  std::unique_ptr<DraftSource> source;  // null when speculative decoding is off
};

// Builds the draft source for `target` (vocabulary check for a draft model; --spec-type mtp: the
// model's MTP head, attached to target.session, which must be loaded with load_mtp and not have
// evaluated anything; an Error naming what the file lacks). Also prints a note when the target
// carries MTP layers that are not used.
Result<SpecSetup> setup_spec(const SpecRequest& req, Loaded& target, const SamplerConfig& sampler, int n_threads);

// One line of figures: drafted, accepted, acceptance, tokens per target forward.
std::string spec_summary(const SpecStats& stats);

}  // namespace sniper::cli
