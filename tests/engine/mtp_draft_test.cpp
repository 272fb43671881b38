// SPDX-License-Identifier: MIT
// The MTP draft head (model/mtp_head.h, engine/mtp_draft.h) on synthetic Qwen3.5 files with one
// nextn block (dense and MoE): greedy output with MTP drafts equals plain greedy output, resident
// and streamed; the head stays in step with the target through rejected drafts and rollbacks
// (its drafts equal those of a head that saw only the final sequence); the plan loads the block
// only when asked and never streams it; bad requests are clear errors. The head's logits against
// llama.cpp's MTP context are checked outside CI (the closing note of session 20).
#include "engine/mtp_draft.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/draft_model.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/plan.h"
#include "engine/speculative.h"
#include "gguf/reader.h"
#include "synth/synth_model.h"

namespace sniper {
namespace {

const std::vector<int32_t> kIds = {1, 17, 300, 42, 99, 5, 77, 123, 250, 8, 400, 33, 61, 2, 19, 500, 7};
constexpr int64_t kBatch = 16;
constexpr int64_t kPredict = 24;

std::string synth_file(const std::string& arch) {
  const std::string path = ::testing::TempDir() + "/sniper_mtp_" + arch + ".gguf";
  SynthSpec s;
  s.arch = arch;
  s.dim = 128;
  s.n_layers = 4;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 32;
  s.hidden_dim = 256;
  s.ssm_state = 32;
  s.ssm_k_heads = 2;
  s.ssm_v_heads = 4;
  s.vocab_size = 512;
  s.n_ctx = 512;
  s.nextn_layers = 1;
  if (arch == "qwen35moe") {
    s.n_experts = 16;
    s.n_experts_active = 4;
    s.expert_hidden_dim = 64;
    s.shared_expert_hidden_dim = 64;
  }
  s.type = "q4_k_m";
  s.n_threads = 2;
  Status st = write_synth_model(s, path, nullptr);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return path;
}

ModelLoadOptions load_options(const std::string& path, bool streamed, bool mtp) {
  ModelLoadOptions lo;
  lo.batch = kBatch;
  lo.n_ctx = 256;
  lo.n_checkpoints = 2;
  lo.load_mtp = mtp;
  if (streamed) {
    auto file = gguf_open(path);
    EXPECT_TRUE(file.ok());
    auto config = load_model_config(*file);
    EXPECT_TRUE(config.ok());
    PlanRequest req;
    req.budget_bytes = UINT64_MAX / 4;
    req.force_stream = true;
    req.n_ctx = 256;
    req.batch = kBatch;
    req.n_checkpoints = 2;
    req.load_mtp = mtp;
    auto plan = make_plan(*file, *config, req);
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    lo.residency = ResidencyMode::kStream;
    lo.mem_bytes = plan->min_budget_bytes;  // the smallest cache: experts evicted all the time
  }
  return lo;
}

std::unique_ptr<Session> new_session(Model& model) {
  SessionOptions so;
  so.n_ctx = 256;
  so.batch = kBatch;
  so.n_threads = 1;
  so.n_checkpoints = 2;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

SamplerConfig greedy() {
  SamplerConfig c;
  c.temperature = 0;
  return c;
}

// The head's first draft distribution for `context` computed directly, position by position,
// from the rule (token p with the target's hidden state of p - 1), without MtpDraft.
std::vector<float> direct_first_q(Model& model, const std::vector<int32_t>& context, const SamplerConfig& sampler) {
  const ModelConfig& c = model.config();
  auto session = new_session(model);
  HiddenRecorder hidden(c.dim);
  session->set_observer(&hidden);
  const std::vector<int32_t> evaluated(context.begin(), context.end() - 1);
  EXPECT_TRUE(session->eval(evaluated).ok());
  session->set_observer(nullptr);
  auto head = MtpHead::create(c, model.store(), 1, model.embedding_rows(), model.mtp_experts());
  EXPECT_TRUE(head.ok()) << head.error().message;
  auto state = SequenceState::create(layer_state_specs((*head)->config()), 256, session->state().kv_config());
  EXPECT_TRUE(state.ok());
  const size_t dim = static_cast<size_t>(c.dim);
  std::vector<float> h(dim, 0.0f), h_out(dim), logits(static_cast<size_t>(c.vocab_size));
  for (size_t p = 0; p < context.size(); ++p) {
    if (p > 0) std::copy_n(hidden.rows.begin() + static_cast<std::ptrdiff_t>((p - 1) * dim), dim, h.begin());
    EXPECT_TRUE((*head)
                    ->forward(&context[p], h.data(), 1, static_cast<int64_t>(p), **state, h_out.data(), logits.data(),
                              session->pool())
                    .ok());
  }
  Sampler s(draft_sampler_config(sampler));
  std::vector<float> q(logits.size());
  s.distribution(logits.data(), static_cast<int32_t>(logits.size()), q.data());
  return q;
}

struct Decoded {
  std::vector<int32_t> history;
  GenerateStats stats;
};

// Greedy decoding of kIds, with the model's MTP head drafting when `mtp` (it is then left in
// *draft, attached to *session, for the caller to inspect).
Decoded decode(Model& model, bool mtp, std::unique_ptr<Session>* session, std::unique_ptr<MtpDraft>* draft) {
  *session = new_session(model);
  if (mtp) {
    auto d = MtpDraft::create(model, **session, greedy());
    EXPECT_TRUE(d.ok()) << d.error().message;
    if (d.ok()) *draft = std::move(d).value();
  }
  auto tok = model.tokenizer();
  EXPECT_TRUE(tok.ok());
  GenerateOptions go;
  go.n_predict = kPredict;
  go.sampler = greedy();
  go.stop_at_eog = false;
  go.draft = mtp ? draft->get() : nullptr;
  go.spec = SpecConfig{4, 0, false};
  Decoded out;
  auto stats = generate(**session, **tok, kIds, go, [](std::string_view) { return true; });
  EXPECT_TRUE(stats.ok()) << stats.error().message;
  if (stats.ok()) out.stats = *stats;
  out.history = (*session)->history();
  return out;
}

struct Case {
  const char* arch;
  bool streamed;
};

class MtpGreedy : public ::testing::TestWithParam<Case> {};

TEST_P(MtpGreedy, EqualsPlainGreedyAndFollowsTheTarget) {
  const Case c = GetParam();
  const std::string path = synth_file(c.arch);
  auto model = Model::load(path, load_options(path, c.streamed, true));
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_EQ((*model)->streams(), c.streamed);
  std::unique_ptr<Session> plain_session, spec_session;
  std::unique_ptr<MtpDraft> unused, mtp;
  const Decoded plain = decode(**model, false, &plain_session, &unused);
  const Decoded spec = decode(**model, true, &spec_session, &mtp);
  ASSERT_NE(mtp, nullptr);
  EXPECT_EQ(spec.history, plain.history);
  EXPECT_GT(spec.stats.spec.n_drafted, 0);
  EXPECT_GT(spec.stats.spec.n_rounds, 2);
  EXPECT_EQ(mtp->stats().missing_hidden, 0) << "the head saw every position the target evaluated";
  // After many rejected drafts and rollbacks, the head drafts what a head that saw only the
  // final sequence drafts, with the same distributions (sampling: q rows).
  std::vector<int32_t> context = spec_session->history();
  context.push_back(9);  // any pending token
  auto fresh_session = new_session(**model);
  auto fresh = MtpDraft::create(**model, *fresh_session, greedy());
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  ASSERT_TRUE(fresh_session->eval(spec_session->history()).ok());
  SamplerConfig sampled;
  sampled.temperature = 1.0f;
  sampled.top_k = 0;
  sampled.top_p = 1.0f;
  sampled.min_p = 0.0f;
  ASSERT_TRUE(mtp->set_sampler(sampled).ok());
  ASSERT_TRUE((*fresh)->set_sampler(sampled).ok());
  Draft a, b;
  ASSERT_TRUE(mtp->draft(context, 3, &a).ok());
  ASSERT_TRUE((*fresh)->draft(context, 3, &b).ok());
  ASSERT_EQ(a.tokens.size(), 3u);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.q.size(), b.q.size());
  double worst = 0;
  for (size_t i = 0; i < a.q.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a.q[i]) - b.q[i]));
  EXPECT_LT(worst, 1e-5) << "the head's cache drifted from the target's sequence";
  // And both equal the pairing rule applied directly.
  const std::vector<float> q0 = direct_first_q(**model, context, sampled);
  ASSERT_GE(a.q.size(), q0.size());
  worst = 0;
  for (size_t i = 0; i < q0.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a.q[i]) - q0[i]));
  EXPECT_LT(worst, 1e-5) << "the head pairs tokens with the wrong hidden states";
}

INSTANTIATE_TEST_SUITE_P(Models, MtpGreedy,
                         ::testing::Values(Case{"qwen35", false}, Case{"qwen35", true}, Case{"qwen35moe", false},
                                           Case{"qwen35moe", true}),
                         [](const auto& info) {
                           return std::string(info.param.arch) + (info.param.streamed ? "_streamed" : "_resident");
                         });

// A resident dense file with its MTP head attached to a session that evaluated kIds.
struct Attached {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
  std::unique_ptr<MtpDraft> draft;
};

Attached attached_after_kids() {
  Attached a;
  const std::string path = synth_file("qwen35");
  auto model = Model::load(path, load_options(path, false, true));
  EXPECT_TRUE(model.ok()) << model.error().message;
  if (!model.ok()) return a;
  a.model = std::move(model).value();
  a.session = new_session(*a.model);
  auto d = MtpDraft::create(*a.model, *a.session, greedy());
  EXPECT_TRUE(d.ok()) << d.error().message;
  if (!d.ok()) return a;
  a.draft = std::move(d).value();
  EXPECT_TRUE(a.session->eval(kIds).ok());
  return a;
}

TEST(MtpDraft, PositionsNotSeenEvaluatedGetAZeroStateAndDraftingGoesOn) {
  Attached a = attached_after_kids();
  ASSERT_NE(a.draft, nullptr);
  const auto& d = a.draft;
  EXPECT_EQ(d->n_past(), static_cast<int64_t>(kIds.size()));
  // As a restored state or a context shift would: positions from 3 on hold other tokens now.
  d->on_rewrite(3);
  EXPECT_EQ(d->n_past(), 3);
  std::vector<int32_t> context = kIds;
  context.push_back(9);
  Draft out;
  ASSERT_TRUE(d->draft(context, 4, &out).ok());
  EXPECT_EQ(out.tokens.size(), 4u);
  EXPECT_EQ(d->n_past(), static_cast<int64_t>(kIds.size()));
  EXPECT_GT(d->stats().missing_hidden, 0);
}

TEST(MtpDraft, DraftPMinStopsAtUnsureTokens) {
  // draft_confidence: the top token's probability among the 10 largest logits.
  std::vector<float> logits(100, -50.0f);
  logits[7] = 2.0f;
  logits[3] = 1.0f;
  logits[90] = 1.0f;
  const float expect = 1.0f / (1.0f + 2.0f * std::exp(-1.0f) + 7.0f * std::exp(-52.0f));
  EXPECT_NEAR(draft_confidence(logits.data(), 100), expect, 1e-6);
  logits.assign(100, 0.0f);  // 100 ties: only 10 count
  EXPECT_NEAR(draft_confidence(logits.data(), 100), 0.1f, 1e-6);

  Attached a = attached_after_kids();
  ASSERT_NE(a.draft, nullptr);
  const auto& d = a.draft;
  std::vector<int32_t> context = kIds;
  context.push_back(9);
  Draft out;
  d->set_p_min(1.0f);  // no token of a random head is that sure
  ASSERT_TRUE(d->draft(context, 4, &out).ok());
  EXPECT_TRUE(out.tokens.empty());
  d->set_p_min(0.0f);
  ASSERT_TRUE(d->draft(context, 4, &out).ok());
  EXPECT_EQ(out.tokens.size(), 4u);
  SpecConfig bad{4, 0, true, 1.5f};
  EXPECT_FALSE(bad.validate().ok());
  EXPECT_NE(bad.validate().error().message.find("--draft-p-min"), std::string::npos);
}

TEST(MtpDraft, ThePlanLoadsTheBlockOnlyWhenAskedAndStreamsOnlyItsExperts) {
  const std::string path = synth_file("qwen35moe");
  auto file = gguf_open(path);
  ASSERT_TRUE(file.ok());
  auto config = load_model_config(*file);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_EQ(config->n_layers, 4);
  EXPECT_EQ(config->n_nextn_layers, 1);
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.n_ctx = 256;
  req.batch = kBatch;
  auto off = make_plan(*file, *config, req);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->mtp_weight_bytes, 0u);
  EXPECT_EQ(off->unloaded_tensors.count("blk.4.nextn.eh_proj.weight"), 1u);
  EXPECT_EQ(off->unloaded_tensors.count("blk.4.ffn_gate_exps.weight"), 1u);
  req.load_mtp = true;
  auto on = make_plan(*file, *config, req);
  ASSERT_TRUE(on.ok());
  EXPECT_GT(on->mtp_weight_bytes, 0u);
  EXPECT_TRUE(on->unloaded_tensors.empty());
  EXPECT_GT(on->kv_bytes, off->kv_bytes);
  EXPECT_EQ(on->all_resident_bytes - off->all_resident_bytes - (on->kv_bytes - off->kv_bytes) -
                (on->scratch_bytes - off->scratch_bytes),
            on->mtp_weight_bytes);
  EXPECT_EQ(on->mtp_streamed_expert_bytes, 0u);
  req.force_stream = true;
  auto streamed = make_plan(*file, *config, req);
  ASSERT_TRUE(streamed.ok());
  EXPECT_TRUE(streamed->stream_experts);
  // The block's routed experts go through the expert cache as a fifth layer; the rest of it
  // (projection, attention, router, shared expert) stays resident.
  EXPECT_EQ(streamed->n_expert_layers, 5);
  EXPECT_EQ(streamed->streamed_tensors.count("blk.4.ffn_gate_exps.weight"), 1u);
  EXPECT_EQ(streamed->streamed_tensors.count("blk.3.ffn_gate_exps.weight"), 1u);
  for (const char* name : {"blk.4.nextn.eh_proj.weight", "blk.4.ffn_gate_inp.weight", "blk.4.ffn_up_shexp.weight",
                           "blk.4.attn_q.weight"}) {
    EXPECT_EQ(streamed->streamed_tensors.count(name), 0u) << name;
  }
  EXPECT_GT(streamed->mtp_streamed_expert_bytes, 0u);
  EXPECT_EQ(streamed->mtp_weight_bytes + streamed->mtp_streamed_expert_bytes, on->mtp_weight_bytes);
  req.load_mtp = false;
  auto streamed_off = make_plan(*file, *config, req);
  ASSERT_TRUE(streamed_off.ok());
  EXPECT_EQ(streamed_off->n_expert_layers, 4);
  EXPECT_EQ(streamed_off->streamed_tensors.count("blk.4.ffn_gate_exps.weight"), 0u);
  EXPECT_EQ(streamed->total_expert_bytes - streamed_off->total_expert_bytes, streamed->mtp_streamed_expert_bytes);

  // Loaded without the block, the head cannot be made; with it, it can.
  auto model = Model::load(path, load_options(path, false, false));
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->store().find_tensor("blk.4.nextn.eh_proj.weight")->data, nullptr);
  auto session = new_session(**model);
  auto d = MtpDraft::create(**model, *session, greedy());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("not loaded"), std::string::npos) << d.error().message;
}

// The head's routed experts read through the model's expert cache give the bits of the resident
// head, and the cache serves them as its layer n_layers.
TEST(MtpDraft, StreamedExpertsGiveTheResidentHeadsLogits) {
  const std::string path = synth_file("qwen35moe");
  std::vector<float> logits[2];
  for (bool streamed : {false, true}) {
    auto model = Model::load(path, load_options(path, streamed, true));
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->mtp_experts() != nullptr, streamed);
    auto session = new_session(**model);
    ASSERT_TRUE(mtp_prompt_logits(**model, *session, kIds, &logits[streamed]).ok());
    if (streamed) {
      const ExpertCache* cache = (*model)->expert_cache();
      ASSERT_NE(cache, nullptr);
      const int64_t n_experts = (*model)->config().n_experts, block = (*model)->config().n_layers;
      uint32_t head_requests = 0;
      for (int64_t e = 0; e < n_experts; ++e)
        head_requests += cache->request_counts()[static_cast<size_t>(block * n_experts + e)];
      EXPECT_GT(head_requests, 0u) << "the head's experts did not come through the cache";
    }
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  EXPECT_EQ(std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * sizeof(float)), 0);
}

TEST(MtpDraft, BadRequestsAreClearErrors) {
  const std::string path = synth_file("qwen35");
  auto model = Model::load(path, load_options(path, false, true));
  ASSERT_TRUE(model.ok()) << model.error().message;
  {
    SCOPED_TRACE("a session that evaluated tokens already");
    auto session = new_session(**model);
    ASSERT_TRUE(session->eval(kIds).ok());
    auto d = MtpDraft::create(**model, *session, greedy());
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message.find("from its start"), std::string::npos) << d.error().message;
  }
  {
    SCOPED_TRACE("a model without an MTP block");
    ModelConfig c = (*model)->config();
    c.n_nextn_layers = 0;
    auto mc = mtp_config(c);
    ASSERT_FALSE(mc.ok());
    EXPECT_NE(mc.error().message.find("nextn_predict_layers"), std::string::npos) << mc.error().message;
  }
  {
    SCOPED_TRACE("--nextn on an architecture without MTP blocks");
    SynthSpec s;
    s.arch = "qwen3";
    s.nextn_layers = 1;
    Status st = validate_synth_spec(s);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("--nextn"), std::string::npos) << st.error().message;
  }
}

}  // namespace
}  // namespace sniper
