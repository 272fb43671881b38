// SPDX-License-Identifier: MIT
#include "spec_args.h"

#include <cstdio>

#include "engine/draft_model.h"
#include "engine/mtp_draft.h"
#include "engine/ngram_draft.h"
#include "engine/plan.h"
#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"

namespace sniper::cli {

std::vector<FlagSpec> spec_flags() {
  return in_group(
      "Speculative decoding",
      {
          {"--spec-type", nullptr, "none|ngram|draft|mtp",
           "speculative decoding draft source (default none; draft when -md is given)"},
          {"--model-draft", "-md", "PATH", "draft model for speculative decoding (same vocabulary as the target)",
           nullptr, "--draft-model"},
          {"--mem-draft", nullptr, "SIZE",
           "the draft model's memory budget, taken off --mem (default: unlimited, resident)"},
          {"--draft-max", nullptr, "N", "most tokens drafted per step, [1, 256] (default 16)", nullptr,
           "--draft --draft-n"},
          {"--draft-min", nullptr, "N", "fewer drafted tokens than this are not verified, [0, draft-max] (default 0)"},
          {"--draft-p-min", nullptr, "P",
           "a draft model or MTP head stops at a token it gives less than P among its top 10, [0, 1] (default 0 = "
           "off)"},
          {"--spec-ngram-size-n", nullptr, "N", "longest n-gram the lookup matches, [1, 64] (default 3)"},
          {"--no-draft-adaptive", nullptr, nullptr,
           "always draft --draft-max tokens (default: adapt to the acceptance)"},
      });
}

Result<SpecKind> parse_spec_kind(const std::string& type) {
  if (type == "none") return SpecKind::kNone;
  if (type == "ngram") return SpecKind::kNgram;
  if (type == "draft") return SpecKind::kDraftModel;
  if (type == "mtp") return SpecKind::kMtp;
  return make_error("--spec-type is '%s' but must be one of: none, ngram, draft, mtp", type.c_str());
}

Status check_mtp_supported(const GgufFile& file, const ModelConfig& c) {
  SNIPER_ASSIGN_OR_RETURN(int64_t nextn, file.get_int_or(c.arch + ".nextn_predict_layers", 0));
  if (nextn <= 0) {
    return make_error(
        "--spec-type mtp: the model has no multi-token-prediction layers (%s.nextn_predict_layers is "
        "absent or 0); use --spec-type ngram or -md DRAFT_MODEL",
        c.arch.c_str());
  }
  if (c.n_nextn_layers <= 0) {
    return make_error(
        "--spec-type mtp: the model has %ld multi-token-prediction layer(s) (%s.nextn_predict_layers), "
        "but sniper runs MTP heads of the qwen35 family only; use --spec-type ngram or -md DRAFT_MODEL",
        static_cast<long>(nextn), c.arch.c_str());
  }
  return ok_status();
}

Result<SpecRequest> parse_spec_args(const Args& args) {
  SpecRequest r;
  const bool has_md = args.has("--model-draft");
  const std::string type = args.get_string("--spec-type", has_md ? "draft" : "none");
  SNIPER_ASSIGN_OR_RETURN(r.kind, parse_spec_kind(type));
  if (has_md && r.kind != SpecKind::kDraftModel) {
    return make_error("-md/--model-draft is given but --spec-type is '%s' (use --spec-type draft, or drop -md)",
                      type.c_str());
  }
  if (r.kind == SpecKind::kNone) {
    for (const char* f :
         {"--mem-draft", "--draft-max", "--draft-min", "--draft-p-min", "--spec-ngram-size-n", "--no-draft-adaptive"}) {
      if (args.has(f)) return make_error("%s needs a draft source: pass --spec-type ngram or -md DRAFT_MODEL", f);
    }
    return r;
  }
  if (r.kind == SpecKind::kDraftModel && !has_md) {
    return make_error("--spec-type draft needs a draft model: pass -md PATH");
  }
  if (args.has("--mem-draft") && r.kind != SpecKind::kDraftModel) {
    return make_error("--mem-draft is the draft model's budget but no draft model is given (-md PATH)");
  }
  if (args.has("--spec-ngram-size-n") && r.kind != SpecKind::kNgram) {
    return make_error("--spec-ngram-size-n applies to --spec-type ngram only (it is '%s')", type.c_str());
  }
  SNIPER_ASSIGN_OR_RETURN(r.config.draft_max, args.get_int("--draft-max", 16, 1, 256));
  SNIPER_ASSIGN_OR_RETURN(r.config.draft_min, args.get_int("--draft-min", 0, 0, 256));
  r.config.adaptive = !args.has("--no-draft-adaptive");
  if (args.has("--draft-p-min")) {
    if (r.kind == SpecKind::kNgram) {
      return make_error(
          "--draft-p-min applies to a draft model or the MTP head, not to n-gram lookup (no probabilities)");
    }
    SNIPER_ASSIGN_OR_RETURN(double p, args.get_float("--draft-p-min", 0.0, 0.0, 1.0));
    r.config.p_min = static_cast<float>(p);
  }
  SNIPER_TRY(r.config.validate());
  if (r.kind == SpecKind::kNgram) {
    SNIPER_ASSIGN_OR_RETURN(r.ngram_size, args.get_int("--spec-ngram-size-n", kDefaultNgramSize, 1, 64));
  }
  if (r.kind == SpecKind::kDraftModel) {
    r.draft_path = args.get_string("--model-draft");
    if (args.has("--mem-draft")) {
      SNIPER_ASSIGN_OR_RETURN(r.draft_mem_bytes, resolve_memory_budget(args.get_string("--mem-draft")));
      if (r.draft_mem_bytes == 0) return make_error("--mem-draft must be a size above 0, e.g. 512M");
    }
  }
  return r;
}

Result<std::unique_ptr<Model>> load_draft_model(const SpecRequest& req, const Model& target, int64_t n_ctx,
                                                int64_t n_sessions) {
  ModelLoadOptions lo = target.options();
  lo.mem_bytes = req.draft_mem_bytes;
  lo.residency = ResidencyMode::kAuto;  // resident when it fits its own budget (or has none)
  lo.n_ctx = n_ctx;
  lo.n_sessions = n_sessions;
  lo.n_checkpoints = req.checkpoints();
  lo.n_logit_rows = 1;  // a draft reads its last token's logits only
  lo.batch = 0;
  // The vocabulary first: a draft that cannot serve this target is refused before it loads.
  SNIPER_ASSIGN_OR_RETURN(const Tokenizer* tt, target.tokenizer());
  {
    auto file = gguf_open(req.draft_path);
    if (!file.ok()) return make_error("draft model %s: %s", req.draft_path.c_str(), file.error().message.c_str());
    auto dt = Tokenizer::from_gguf(*file);
    if (!dt.ok()) return make_error("draft model %s: %s", req.draft_path.c_str(), dt.error().message.c_str());
    Status compat = check_draft_vocab(*tt, *dt);
    if (!compat.ok()) return make_error("draft model %s: %s", req.draft_path.c_str(), compat.error().message.c_str());
  }
  auto draft = Model::load(req.draft_path, lo);
  if (!draft.ok()) return make_error("draft model %s: %s", req.draft_path.c_str(), draft.error().message.c_str());
  return std::move(draft).value();
}

Result<SpecSetup> setup_spec(const SpecRequest& req, Loaded& target, const SamplerConfig& sampler, int n_threads) {
  SpecSetup out;
  const ModelConfig& c = target.model->config();
  if (req.kind == SpecKind::kMtp) {
    SNIPER_TRY(check_mtp_supported(target.model->gguf(), c));
    auto mtp = MtpDraft::create(*target.model, *target.session, sampler);
    if (!mtp.ok()) return make_error("--spec-type mtp: %s", mtp.error().message.c_str());
    (*mtp)->set_p_min(req.config.p_min);
    out.source = std::move(mtp).value();
    return out;
  }
  SNIPER_ASSIGN_OR_RETURN(int64_t nextn, target.model->gguf().get_int_or(c.arch + ".nextn_predict_layers", 0));
  if (nextn > 0) {
    std::fprintf(stderr,
                 "note: the model has %ld multi-token-prediction layer(s) (%s.nextn_predict_layers); "
                 "--spec-type mtp drafts with them\n",
                 static_cast<long>(nextn), c.arch.c_str());
  }
  if (req.kind == SpecKind::kNgram) {
    out.source = std::make_unique<NgramDraft>(req.ngram_size);
  } else if (req.kind == SpecKind::kDraftModel) {
    SNIPER_ASSIGN_OR_RETURN(out.draft_model, load_draft_model(req, *target.model, target.session->n_ctx(), 1));
    SNIPER_ASSIGN_OR_RETURN(auto dm, DraftModel::create(*out.draft_model, target.session->n_ctx(), n_threads,
                                                        static_cast<int32_t>(c.vocab_size), sampler));
    dm->set_p_min(req.config.p_min);
    out.source = std::move(dm);
  }
  return out;
}

std::string spec_summary(const SpecStats& s) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "speculative: %ld drafted, %ld accepted (%.1f%%), %.2f tokens per target forward "
                "(%ld verify + %ld single, of which %ld backing off; %ld rollback re-evals)",
                static_cast<long>(s.n_drafted), static_cast<long>(s.n_accepted), 100.0 * s.acceptance(),
                s.tokens_per_forward(), static_cast<long>(s.n_rounds), static_cast<long>(s.n_plain),
                static_cast<long>(s.n_backoff), static_cast<long>(s.n_rollback_evals));
  return buf;
}

}  // namespace sniper::cli
