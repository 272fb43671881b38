// SPDX-License-Identifier: MIT
// Speculative decoding: greedy output with drafts (n-gram lookup, the model drafting for itself,
// an oracle that drafts the right continuation with a wrong token mixed in) equals greedy output
// without, on stories260K (trained: lookup and self-draft really accept), a synthetic MoE, a
// hybrid (delta-net) model and a hybrid MoE, resident and streamed; rollback after a rejection
// leaves the KV cache and recurrent state of a run that never saw the rejected tokens; bad
// configurations and incompatible draft vocabularies are clear errors.
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <string>

#include "engine/draft_model.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/ngram_draft.h"
#include "engine/plan.h"
#include "gguf/reader.h"
#include "golden/shared_dir.h"
#include "tokenizer/tokenizer.h"

namespace sniper {
namespace {

const std::vector<int32_t> kIds = {1, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63, 408, 126, 403, 165};
constexpr int64_t kBatch = 16;
constexpr int64_t kPredict = 32;

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name; }

uint64_t min_stream_budget(const std::string& path) {
  auto file = gguf_open(path);
  EXPECT_TRUE(file.ok());
  auto config = load_model_config(*file);
  EXPECT_TRUE(config.ok());
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.force_stream = true;
  req.n_ctx = std::min<int64_t>(config->n_ctx_train, 4096);
  req.batch = kBatch;
  req.n_checkpoints = 2;
  auto plan = make_plan(*file, *config, req);
  EXPECT_TRUE(plan.ok());
  return plan->min_budget_bytes;
}

ModelLoadOptions load_options(const std::string& path, bool streamed) {
  ModelLoadOptions lo;
  lo.batch = kBatch;
  lo.n_checkpoints = 2;
  if (streamed) {
    lo.residency = ResidencyMode::kStream;
    lo.mem_bytes = min_stream_budget(path);
  }
  return lo;
}

std::unique_ptr<Session> new_session(Model& model) {
  SessionOptions so;
  so.n_ctx = 256;
  so.batch = kBatch;
  so.n_threads = 1;  // results do not depend on it; one thread stays fast on a loaded machine
  so.n_checkpoints = 2;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

struct Output {
  std::string text;
  std::vector<int32_t> history;  // prompt + every generated token but the last
  GenerateStats stats;
};

Output decode(Model& model, DraftSource* draft, const SpecConfig& spec = SpecConfig{8, 0, true}) {
  auto session = new_session(model);
  auto tok = model.tokenizer();
  EXPECT_TRUE(tok.ok());
  GenerateOptions go;
  go.n_predict = kPredict;
  go.sampler.temperature = 0;
  go.stop_at_eog = false;
  go.draft = draft;
  go.spec = spec;
  Output out;
  auto stats = generate(*session, **tok, kIds, go, [&](std::string_view t) {
    out.text.append(t);
    return true;
  });
  EXPECT_TRUE(stats.ok()) << stats.error().message;
  if (stats.ok()) out.stats = *stats;
  out.history = session->history();
  return out;
}

// Drafts the plain run's continuation, with one token changed at a seeded random position in
// most drafts: every round keeps a prefix and rejects the rest.
class OracleDraft final : public DraftSource {
 public:
  explicit OracleDraft(std::vector<int32_t> truth, int32_t n_vocab) : truth_(std::move(truth)), n_vocab_(n_vocab) {}
  Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) override {
    out->tokens.clear();
    out->q.clear();
    for (size_t i = context.size(); i < truth_.size() && static_cast<int64_t>(out->tokens.size()) < n_max; ++i) {
      out->tokens.push_back(truth_[i]);
    }
    rng_ = rng_ * 6364136223846793005ull + 1442695040888963407ull;
    if (!out->tokens.empty() && (rng_ >> 60) < 12) {
      const size_t at = (rng_ >> 33) % out->tokens.size();
      out->tokens[at] = (out->tokens[at] + 1 + static_cast<int32_t>((rng_ >> 20) % 7)) % n_vocab_;
    }
    return ok_status();
  }
  const char* name() const override { return "oracle"; }

 private:
  std::vector<int32_t> truth_;
  int32_t n_vocab_;
  uint64_t rng_ = 42;
};

struct Fixture {
  const char* file;
  bool streamed;
};

class SpeculativeGreedy : public ::testing::TestWithParam<Fixture> {};

TEST_P(SpeculativeGreedy, EqualsPlainGreedy) {
  const Fixture f = GetParam();
  const std::string path = model_path(f.file);
  auto model = Model::load(path, load_options(path, f.streamed));
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_EQ((*model)->streams(), f.streamed);
  const Output plain = decode(**model, nullptr);
  ASSERT_EQ(plain.stats.n_gen, kPredict);

  {
    SCOPED_TRACE("n-gram lookup");
    NgramDraft ngram(kDefaultNgramSize);
    const Output spec = decode(**model, &ngram);
    EXPECT_EQ(spec.text, plain.text);
    EXPECT_EQ(spec.history, plain.history);
  }
  {
    SCOPED_TRACE("oracle with a wrong token in most drafts");
    OracleDraft oracle(plain.history, static_cast<int32_t>((*model)->config().vocab_size));
    const Output spec = decode(**model, &oracle);
    EXPECT_EQ(spec.text, plain.text);
    EXPECT_EQ(spec.history, plain.history);
    EXPECT_GT(spec.stats.spec.n_accepted, 0);
    EXPECT_LT(spec.stats.spec.n_accepted, spec.stats.spec.n_drafted);
    // A hybrid state cannot be rewound: every rejection restores a checkpoint and re-evaluates.
    if (new_session(**model)->state().needs_checkpoints()) {
      EXPECT_GT(spec.stats.spec.n_rollback_evals, 0);
    }
  }
  {
    SCOPED_TRACE("the model drafting for itself");
    auto draft_model = Model::load(path, load_options(path, false));
    ASSERT_TRUE(draft_model.ok()) << draft_model.error().message;
    auto tt = (*model)->tokenizer();
    auto dt = (*draft_model)->tokenizer();
    ASSERT_TRUE(tt.ok() && dt.ok());
    ASSERT_TRUE(check_draft_vocab(**tt, **dt).ok());
    SamplerConfig greedy;
    greedy.temperature = 0;
    auto dm = DraftModel::create(**draft_model, 256, 1, static_cast<int32_t>((*model)->config().vocab_size), greedy);
    ASSERT_TRUE(dm.ok()) << dm.error().message;
    const Output spec = decode(**model, dm->get());
    EXPECT_EQ(spec.text, plain.text);
    EXPECT_EQ(spec.history, plain.history);
    // Same weights (batched and single-token kernels round alike to the argmax): nearly all kept.
    EXPECT_GT(spec.stats.spec.acceptance(), 0.8);
    EXPECT_GT(spec.stats.spec.tokens_per_forward(), 3.0);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculativeGreedy,
                         ::testing::Values(Fixture{"stories260K.gguf", false},
                                           Fixture{"syn-qwen3moe-Q4_K_M.gguf", false},
                                           Fixture{"syn-qwen3moe-Q4_K_M.gguf", true},
                                           Fixture{"syn-qwen35-Q4_K_M.gguf", true},
                                           Fixture{"syn-qwen35moe-small.gguf", true}),
                         [](const auto& info) {
                           std::string n = info.param.file;
                           n = n.substr(0, n.find(".gguf"));
                           for (char& c : n) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return n + (info.param.streamed ? "_streamed" : "_resident");
                         });

// Drafts a wrong continuation for its first n_wrong calls, then the plain run's continuation.
class TurningDraft final : public DraftSource {
 public:
  TurningDraft(std::vector<int32_t> truth, int32_t n_vocab, int64_t n_wrong)
      : truth_(std::move(truth)), n_vocab_(n_vocab), n_wrong_(n_wrong) {}
  Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) override {
    out->tokens.clear();
    out->q.clear();
    const bool wrong = calls_++ < n_wrong_;
    for (size_t i = context.size(); i < truth_.size() && static_cast<int64_t>(out->tokens.size()) < n_max; ++i) {
      out->tokens.push_back(wrong ? (truth_[i] + 1) % n_vocab_ : truth_[i]);
    }
    return ok_status();
  }
  const char* name() const override { return "turning"; }
  int64_t calls() const { return calls_; }

 private:
  std::vector<int32_t> truth_;
  int32_t n_vocab_;
  int64_t n_wrong_;
  int64_t calls_ = 0;
};

// A source whose drafts keep failing is asked less and less often (plain steps instead), and
// one accepted draft brings it back; the output never changes.
TEST(Speculative, FailingDraftsBackOffAndAcceptedOnesComeBack) {
  auto model = Model::load(model_path("stories260K.gguf"), load_options("", false));
  ASSERT_TRUE(model.ok());
  const Output plain = decode(**model, nullptr);
  const auto n_vocab = static_cast<int32_t>((*model)->config().vocab_size);
  {
    SCOPED_TRACE("always wrong");
    TurningDraft wrong(plain.history, n_vocab, 1 << 30);
    const Output spec = decode(**model, &wrong);
    EXPECT_EQ(spec.history, plain.history);
    EXPECT_EQ(spec.stats.spec.n_accepted, 0);
    // The first token comes from the prompt's logits; of the 31 after it, the source is asked
    // for steps 1, 2 and 3, then after 1, 2, 4, 8 and 16 skipped steps: 7 times.
    EXPECT_EQ(wrong.calls(), 7);
    EXPECT_EQ(spec.stats.spec.n_backoff, kPredict - 1 - 7);
    EXPECT_EQ(spec.stats.spec.n_rounds, 7);
  }
  {
    SCOPED_TRACE("wrong, then right");
    TurningDraft turning(plain.history, n_vocab, 5);
    const Output spec = decode(**model, &turning);
    EXPECT_EQ(spec.history, plain.history);
    EXPECT_EQ(spec.stats.spec.n_backoff, 1 + 2 + 4);
    EXPECT_GT(spec.stats.spec.n_accepted, 10) << "drafting did not resume after an accepted draft";
  }
  {
    SCOPED_TRACE("without adaptation, no back-off");
    TurningDraft wrong(plain.history, n_vocab, 1 << 30);
    const Output spec = decode(**model, &wrong, SpecConfig{8, 0, false});
    EXPECT_EQ(spec.history, plain.history);
    EXPECT_EQ(spec.stats.spec.n_backoff, 0);
    EXPECT_EQ(wrong.calls(), spec.stats.spec.n_rounds);
  }
}

TEST(Speculative, NgramLookupAcceptsOnTheTrainedModel) {
  auto model = Model::load(model_path("stories260K.gguf"), load_options("", false));
  ASSERT_TRUE(model.ok());
  NgramDraft ngram(kDefaultNgramSize);
  const Output spec = decode(**model, &ngram);
  EXPECT_GT(spec.stats.spec.n_accepted, 0);
  EXPECT_GT(spec.stats.spec.tokens_per_forward(), 1.0);
}

// A server slot keeps one DraftModel for all its jobs: set_sampler switches it between greedy
// (argmax, point masses) and each job's sampling settings (draws, with q), and a seed replays.
TEST(Speculative, DraftModelFollowsEachJobsSampler) {
  auto target = Model::load(model_path("stories260K.gguf"), load_options("", false));
  auto draft_model = Model::load(model_path("stories260K-Q8_0.gguf"), load_options("", false));
  ASSERT_TRUE(target.ok() && draft_model.ok());
  const auto n_vocab = static_cast<int32_t>((*target)->config().vocab_size);
  SamplerConfig greedy;
  greedy.temperature = 0;
  auto dm = DraftModel::create(**draft_model, 256, 1, n_vocab, greedy);
  ASSERT_TRUE(dm.ok()) << dm.error().message;
  DraftModel& d = **dm;
  Draft g1, g2, s1, s2, s3;
  ASSERT_TRUE(d.draft(kIds, 8, &g1).ok());
  EXPECT_EQ(g1.tokens.size(), 8u);
  EXPECT_TRUE(g1.q.empty());  // greedy: point masses
  SamplerConfig hot;
  hot.temperature = 1.5f;
  hot.top_k = 0;
  hot.top_p = 1;
  hot.min_p = 0;
  hot.seed = 11;
  ASSERT_TRUE(d.set_sampler(hot).ok());
  ASSERT_TRUE(d.draft(kIds, 8, &s1).ok());
  ASSERT_FALSE(s1.tokens.empty());
  ASSERT_EQ(s1.q.size(), s1.tokens.size() * static_cast<size_t>(n_vocab));
  for (size_t i = 0; i < s1.tokens.size(); ++i) {  // each draw has positive probability under its q row
    EXPECT_GT(s1.q[i * static_cast<size_t>(n_vocab) + static_cast<size_t>(s1.tokens[i])], 0.0f);
  }
  ASSERT_TRUE(d.set_sampler(hot).ok());  // same seed, same context: the same draws
  ASSERT_TRUE(d.draft(kIds, 8, &s2).ok());
  EXPECT_EQ(s2.tokens, s1.tokens);
  hot.seed = 12;
  ASSERT_TRUE(d.set_sampler(hot).ok());
  ASSERT_TRUE(d.draft(kIds, 8, &s3).ok());
  EXPECT_NE(s3.tokens, s1.tokens);  // 8 draws at temperature 1.5 over 512 tokens: a collision is ~impossible
  ASSERT_TRUE(d.set_sampler(greedy).ok());
  ASSERT_TRUE(d.draft(kIds, 8, &g2).ok());
  EXPECT_EQ(g2.tokens, g1.tokens);
  EXPECT_TRUE(g2.q.empty());
  SamplerConfig bad;
  bad.top_p = 0;
  const Status st = d.set_sampler(bad);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("top_p"), std::string::npos) << st.error().message;
}

// A draft that proposes one token drawn from a fixed distribution q (and reports q).
class FixedQDraft final : public DraftSource {
 public:
  explicit FixedQDraft(std::vector<float> q) : q_(std::move(q)) {
    SamplerConfig c;
    c.seed = 4242;
    rng_.emplace(c);
  }
  Status draft(std::span<const int32_t>, int64_t n_max, Draft* out) override {
    out->tokens.assign(1, rng_->sample_from(q_.data(), static_cast<int32_t>(q_.size())));
    out->q = q_;
    (void)n_max;
    return ok_status();
  }
  const char* name() const override { return "fixed-q"; }

 private:
  std::vector<float> q_;
  std::optional<Sampler> rng_;
};

TEST(Speculative, SampledTokensFollowTheTargetDistributionEndToEnd) {
  // stories260K at temperature 1 (top-k 40 and min-p as by default): the token emitted at the
  // first verified position, over many seeded rounds with a draft drawn from a q unlike p,
  // follows the target's p (chi-square, bins of expected count >= 5, the rest merged).
  auto model = Model::load(model_path("stories260K.gguf"), load_options("", false));
  ASSERT_TRUE(model.ok());
  auto tok = (*model)->tokenizer();
  ASSERT_TRUE(tok.ok());
  const auto n_vocab = static_cast<int32_t>((*model)->config().vocab_size);
  const std::vector<int32_t> prompt(kIds.begin(), kIds.begin() + 6);
  const int32_t pending = kIds[6];
  GeneratorOptions go;
  go.sampler.temperature = 1.0f;
  go.n_predict = 100;
  go.stop_at_eog = false;
  // p: the sampler's distribution after prompt + pending.
  auto s = new_session(**model);
  std::vector<int32_t> with_pending = prompt;
  with_pending.push_back(pending);
  ASSERT_TRUE(s->eval(with_pending).ok());
  std::vector<float> p(static_cast<size_t>(n_vocab));
  {
    Sampler sampler(go.sampler);
    for (int32_t t : prompt) sampler.accept(t);
    sampler.accept(pending);
    sampler.distribution(s->last_logits().data(), n_vocab, p.data());
  }
  // q: uniform over the 12 tokens p ranks 3rd to 14th, plus p's top 2 at a tenth of p.
  std::vector<int32_t> order(static_cast<size_t>(n_vocab));
  for (int32_t i = 0; i < n_vocab; ++i) order[static_cast<size_t>(i)] = i;
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return p[static_cast<size_t>(a)] > p[static_cast<size_t>(b)]; });
  std::vector<float> q(static_cast<size_t>(n_vocab), 0.0f);
  for (int i = 2; i < 14; ++i) q[static_cast<size_t>(order[static_cast<size_t>(i)])] = 1.0f;
  for (int i = 0; i < 2; ++i)
    q[static_cast<size_t>(order[static_cast<size_t>(i)])] =
        p[static_cast<size_t>(order[static_cast<size_t>(i)])] * 1.2f;
  float sum = 0;
  for (float x : q) sum += x;
  for (float& x : q) x /= sum;
  FixedQDraft draft(q);

  auto base = new_session(**model);
  ASSERT_TRUE(base->eval(prompt).ok());
  constexpr int kRounds = 2000;
  std::vector<int64_t> counts(static_cast<size_t>(n_vocab), 0);
  int64_t accepted = 0;
  for (int r = 0; r < kRounds; ++r) {
    go.sampler.seed = static_cast<uint64_t>(r) + 1;
    auto gen = Generator::create(**tok, go);
    ASSERT_TRUE(gen.ok());
    gen->accept_prompt(prompt);
    gen->sampler().accept(pending);  // as if the pending token had been pushed
    auto dec = SpeculativeDecoder::create(*base, draft, SpecConfig{1, 0, false});
    ASSERT_TRUE(dec.ok());
    int32_t first = -1;
    ASSERT_TRUE(dec->round(*base, *gen, pending, -1,
                           [&](const GeneratorStep& st) {
                             if (first < 0) first = st.token;
                           })
                    .ok());
    ++counts[static_cast<size_t>(first)];
    accepted += dec->stats().n_accepted;
    ASSERT_EQ(base->truncate(static_cast<int64_t>(prompt.size())), static_cast<int64_t>(prompt.size()));
  }
  // Both outcomes happen (the test exercises acceptance and the residual draw).
  EXPECT_GT(accepted, kRounds / 20);
  EXPECT_LT(accepted, kRounds - kRounds / 20);
  double chi = 0, merged_e = 0, merged_o = 0;
  int bins = 0;
  for (int32_t i = 0; i < n_vocab; ++i) {
    const double e = static_cast<double>(p[static_cast<size_t>(i)]) * kRounds;
    const auto o = static_cast<double>(counts[static_cast<size_t>(i)]);
    if (p[static_cast<size_t>(i)] == 0) {
      EXPECT_EQ(o, 0) << "token " << i << " is outside the target's candidates";
    } else if (e >= 5) {
      chi += (o - e) * (o - e) / e;
      ++bins;
    } else {
      merged_e += e;
      merged_o += o;
    }
  }
  if (merged_e > 0) {
    chi += (merged_o - merged_e) * (merged_o - merged_e) / merged_e;
    ++bins;
  }
  ASSERT_GE(bins, 3);
  // Wilson-Hilferty upper quantile at 1e-9 (z = 6.0): above the exact one (55.9 at 7 degrees of
  // freedom gives 59), so a false failure is even less likely; a wrong rule is far above it
  // (tests/sampling/speculative_rule_test.cpp shows one failing the same statistic).
  const double df = bins - 1;
  const double h = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1.0 - h + 6.0 * std::sqrt(h), 3);
  EXPECT_LT(chi, critical) << bins << " bins";
}

// The state bytes of every layer after n tokens.
std::vector<uint8_t> state_bytes(const Session& s) {
  std::vector<uint8_t> out;
  for (int64_t l = 0; l < s.state().n_layers(); ++l) {
    const size_t n = s.state().saved_layer_bytes(l, s.n_past());
    const size_t at = out.size();
    out.resize(at + n);
    s.state().save_layer(l, s.n_past(), out.data() + at);
  }
  return out;
}

TEST(Speculative, RollbackEqualsARunThatNeverSawTheRejectedTokens) {
  for (const char* name : {"stories260K.gguf", "syn-qwen35-Q4_K_M.gguf", "syn-qwen3next-small.gguf"}) {
    SCOPED_TRACE(name);
    auto model = Model::load(model_path(name), load_options("", false));
    ASSERT_TRUE(model.ok()) << model.error().message;
    const std::vector<int32_t> verify = {165, 63, 408, 126, 403};  // pending + 4 drafts
    constexpr int64_t kKeep = 2;                                   // pending + 1 accepted
    // A: verify all five, reject the last three.
    auto a = new_session(**model);
    ASSERT_TRUE(a->eval(kIds).ok());
    if (!a->state().rewindable(a->n_past() + 5)) a->checkpoint();
    ASSERT_TRUE(a->eval(verify).ok());
    std::vector<int32_t> scratch;
    int64_t n_redo = 0;
    ASSERT_TRUE(rollback_session(*a, static_cast<int64_t>(kIds.size()) + kKeep, scratch, &n_redo).ok());
    EXPECT_EQ(n_redo, a->state().needs_checkpoints() ? kKeep : 0);
    // B: only ever the kept tokens, in one forward pass as A's re-evaluation (or A's verify pass
    // for a state that rewinds, whose rows of the kept positions do not depend on later tokens).
    auto b = new_session(**model);
    ASSERT_TRUE(b->eval(kIds).ok());
    ASSERT_TRUE(b->eval(std::span<const int32_t>(verify).first(kKeep)).ok());
    ASSERT_EQ(a->n_past(), b->n_past());
    EXPECT_EQ(a->history(), b->history());
    EXPECT_TRUE(state_bytes(*a) == state_bytes(*b)) << "the state after rollback differs";
    // And the next token sees the same thing.
    const int32_t next[1] = {7};
    ASSERT_TRUE(a->eval(next).ok());
    ASSERT_TRUE(b->eval(next).ok());
    EXPECT_TRUE(a->last_logits() == b->last_logits());
  }
}

TEST(Speculative, BadConfigurationsAreClearErrors) {
  EXPECT_FALSE((SpecConfig{0, 0, true}).validate().ok());
  EXPECT_FALSE((SpecConfig{-3, 0, true}).validate().ok());
  EXPECT_FALSE((SpecConfig{300, 0, true}).validate().ok());
  const Status st = SpecConfig{4, 5, true}.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--draft-min is 5"), std::string::npos) << st.error().message;
  EXPECT_FALSE((SpecConfig{4, -1, true}).validate().ok());

  auto model = Model::load(model_path("syn-qwen35-Q4_K_M.gguf"), load_options("", false));
  ASSERT_TRUE(model.ok());
  NgramDraft ngram(3);
  SessionOptions so;
  so.n_ctx = 256;
  so.batch = kBatch;
  auto no_ckpt = Session::create(**model, so);
  ASSERT_TRUE(no_ckpt.ok());
  auto r = SpeculativeDecoder::create(**no_ckpt, ngram, SpecConfig{4, 0, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("checkpoints"), std::string::npos) << r.error().message;
  auto s = new_session(**model);
  r = SpeculativeDecoder::create(*s, ngram, SpecConfig{kBatch, 0, true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--batch"), std::string::npos) << r.error().message;
}

Tokenizer tokenizer_of(const std::string& path) {
  auto file = gguf_open(path);
  EXPECT_TRUE(file.ok()) << path;
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok.ok()) << path;
  return std::move(tok).value();
}

TEST(Speculative, IncompatibleDraftVocabularyIsAClearError) {
  const Tokenizer stories = tokenizer_of(model_path("stories260K.gguf"));
  const Tokenizer spm = tokenizer_of(shared_dir() + "/tokenizer/ggml-vocab-llama-spm.gguf");
  const Tokenizer phi3 = tokenizer_of(shared_dir() + "/tokenizer/ggml-vocab-phi-3.gguf");
  const Tokenizer qwen2 = tokenizer_of(shared_dir() + "/tokenizer/ggml-vocab-qwen2.gguf");
  EXPECT_TRUE(check_draft_vocab(stories, tokenizer_of(model_path("stories260K-Q8_0.gguf"))).ok());
  struct Case {
    const Tokenizer* target;
    const Tokenizer* draft;
    const char* says;
  };
  const Case cases[] = {
      {&stories, &qwen2, "tokenizer model"},          // SPM vs BPE
      {&stories, &spm, "tokens but the target has"},  // 32000 vs 512 tokens
      {&spm, &phi3, "special tokens differ"},         // phi-3: eos is its added <|endoftext|>
  };
  for (const Case& c : cases) {
    const Status st = check_draft_vocab(*c.target, *c.draft);
    ASSERT_FALSE(st.ok()) << c.says;
    EXPECT_NE(st.error().message.find("incompatible"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find(c.says), std::string::npos) << st.error().message;
  }
}

}  // namespace
}  // namespace sniper
