// SPDX-License-Identifier: MIT
// Speculative rounds sharing one forward pass (issue 42; the server's scheduler does this): the
// drafts of several sequences are verified in one BatchEvaluator pass beside plain decode rows
// (SpeculativeDecoder::begin, one pass, finish), and every sequence ends with the tokens, text,
// draft statistics (rounds, drafted, accepted, back-off, rollback re-evaluations), history and
// last logits of its run alone through SpeculativeDecoder::round(): bit for bit on quantized
// fixtures (dense, routed experts resident and streamed through the smallest expert cache, a
// delta-net hybrid whose rejected drafts restore a checkpoint). The sequences mix greedy and
// sampled jobs, drafts that are always right, mostly right and always wrong, and different
// lengths, so one sequence's rejection and rollback happen in passes where the others accept:
// they stay untouched. The greedy sequences also equal plain greedy decoding.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "engine/batch_eval.h"
#include "engine/generator.h"
#include "engine/plan.h"
#include "engine/speculative.h"
#include "gguf/reader.h"
#include "golden/shared_dir.h"

namespace sniper {
namespace {

constexpr int64_t kCtx = 128;
constexpr int64_t kBatch = 16;

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

std::vector<int32_t> prompt_of(int seq, int64_t n, int32_t vocab) {
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i)
    t.push_back(static_cast<int32_t>((5 + 37 * i + 101 * seq + i * i * (seq + 3)) % vocab));
  return t;
}

// Drafts the continuation of `truth` (a plain greedy run: prompt + tokens), changing one token
// at a random position of a draft with probability wrong/16 (seeded): 0 always right; 16 the
// first token of every draft (none is ever kept).
class OracleDraft final : public DraftSource {
 public:
  OracleDraft(std::vector<int32_t> truth, int32_t n_vocab, uint64_t wrong, uint64_t seed)
      : truth_(std::move(truth)), n_vocab_(n_vocab), wrong_(wrong), rng_(seed) {}
  Status draft(std::span<const int32_t> context, int64_t n_max, Draft* out) override {
    out->tokens.clear();
    out->q.clear();
    for (size_t i = context.size(); i < truth_.size() && static_cast<int64_t>(out->tokens.size()) < n_max; ++i)
      out->tokens.push_back(truth_[i]);
    rng_ = rng_ * 6364136223846793005ull + 1442695040888963407ull;
    if (!out->tokens.empty() && (rng_ >> 60) < wrong_) {
      const size_t at = wrong_ >= 16 ? 0 : (rng_ >> 33) % out->tokens.size();
      out->tokens[at] = (out->tokens[at] + 1 + static_cast<int32_t>((rng_ >> 20) % 7)) % n_vocab_;
    }
    return ok_status();
  }
  const char* name() const override { return "oracle"; }

 private:
  std::vector<int32_t> truth_;
  int32_t n_vocab_;
  uint64_t wrong_;
  uint64_t rng_;
};

struct SeqSpec {
  int64_t prompt_len;
  int64_t n_predict;
  float temperature;  // 0: greedy
  int wrong;          // OracleDraft's wrong/16; -1: no drafts (plain decoding)
  int64_t draft_max;
};

// Three speculative greedy sequences (right, mostly right, always wrong), a sampled one with
// drafts, and a plain greedy one, of different prompt and output lengths.
const std::vector<SeqSpec> kSeqs = {
    {11, 24, 0.0f, 0, 4}, {5, 30, 0.0f, 9, 6}, {14, 20, 0.0f, 16, 3}, {7, 26, 0.9f, 6, 4}, {9, 18, 0.0f, -1, 0},
};

struct Result1 {
  std::vector<int32_t> tokens;
  std::string text;
  SpecStats stats;
  std::vector<int32_t> history;
  std::vector<float> last_logits;
};

struct Seq {
  std::unique_ptr<Session> session;
  std::optional<Generator> gen;
  std::unique_ptr<OracleDraft> source;
  std::optional<SpeculativeDecoder> spec;
  int32_t pending = -1;
  bool done = false;
  Result1 out;
  void take(const GeneratorStep& step) {
    if (done) return;
    if (step.token >= 0) out.tokens.push_back(step.token);
    out.text += step.text;
    pending = step.token;
    done = step.done;
  }
  int64_t remaining(const SeqSpec& s) const { return s.n_predict - gen->n_generated(); }
};

class Runner {
 public:
  explicit Runner(Model& model) : model_(model), vocab_(static_cast<int32_t>(model.config().vocab_size)) {}

  // Plain greedy continuation of each sequence's prompt (the oracles' truth).
  std::vector<int32_t> plain_truth(int i) {
    const SeqSpec& s = kSeqs[static_cast<size_t>(i)];
    SeqSpec plain = s;
    plain.temperature = 0;
    plain.wrong = -1;
    Seq q = make(i, plain, {});
    EXPECT_TRUE(q.session->eval(prompt_of(i, s.prompt_len, vocab_)).ok());
    q.take(q.gen->step(q.session->last_logits().data(), vocab_, q.session->n_past(), q.session->n_ctx()));
    while (!q.done) {
      const int32_t t[1] = {q.pending};
      EXPECT_TRUE(q.session->eval(t).ok());
      q.take(q.gen->step(q.session->last_logits().data(), vocab_, q.session->n_past(), q.session->n_ctx()));
    }
    std::vector<int32_t> truth = prompt_of(i, s.prompt_len, vocab_);
    truth.insert(truth.end(), q.out.tokens.begin(), q.out.tokens.end());
    return truth;
  }

  // Each sequence alone: its prompt, then SpeculativeDecoder::round() (or plain steps).
  Result1 alone(int i, const std::vector<int32_t>& truth) {
    const SeqSpec& s = kSeqs[static_cast<size_t>(i)];
    Seq q = make(i, s, truth);
    EXPECT_TRUE(q.session->eval(prompt_of(i, s.prompt_len, vocab_)).ok());
    q.take(q.gen->step(q.session->last_logits().data(), vocab_, q.session->n_past(), q.session->n_ctx()));
    while (!q.done) {
      if (q.spec) {
        Status st = q.spec->round(*q.session, *q.gen, q.pending, q.remaining(s),
                                  [&](const GeneratorStep& step) { q.take(step); });
        EXPECT_TRUE(st.ok()) << st.error().message;
        if (!st.ok()) break;
      } else {
        const int32_t t[1] = {q.pending};
        EXPECT_TRUE(q.session->eval(t).ok());
        q.take(q.gen->step(q.session->last_logits().data(), vocab_, q.session->n_past(), q.session->n_ctx()));
      }
    }
    return finish(q);
  }

  // All sequences together: one pass for the prompts, then one pass per step holding every
  // unfinished sequence's decode row or verification rows.
  std::vector<Result1> together(const std::vector<std::vector<int32_t>>& truths, ThreadPool& pool) {
    std::vector<Seq> seqs;
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < kSeqs.size(); ++i) {
      seqs.push_back(make(static_cast<int>(i), kSeqs[i], truths[i]));
      prompts.push_back(prompt_of(static_cast<int>(i), kSeqs[i].prompt_len, vocab_));
    }
    auto ev = BatchEvaluator::create(model_, pass_rows(kBatch, static_cast<int64_t>(kSeqs.size()), 1 + 6), kCtx,
                                     RoutingBias(), pool);
    EXPECT_TRUE(ev.ok()) << ev.error().message;
    if (!ev.ok()) return {};
    std::vector<BatchItem> items;
    for (size_t i = 0; i < seqs.size(); ++i) items.push_back({seqs[i].session.get(), prompts[i], false});
    Status st = (*ev)->eval(items);
    EXPECT_TRUE(st.ok()) << st.error().message;
    for (Seq& q : seqs)
      q.take(q.gen->step(q.session->last_logits().data(), vocab_, q.session->n_past(), q.session->n_ctx()));
    std::vector<std::vector<int32_t>> rows(seqs.size());
    int64_t passes = 0, shared = 0;
    for (;;) {
      items.clear();
      std::vector<size_t> who;
      for (size_t i = 0; i < seqs.size(); ++i) {
        Seq& q = seqs[i];
        if (q.done) continue;
        if (q.spec) {
          auto r = q.spec->begin(*q.session, q.pending, q.remaining(kSeqs[i]));
          EXPECT_TRUE(r.ok());
          rows[i].assign(r->begin(), r->end());
        } else {
          rows[i] = {q.pending};
        }
        items.push_back({q.session.get(), rows[i], q.spec.has_value()});
        who.push_back(i);
      }
      if (items.empty()) break;
      int64_t verifying = 0;
      for (const BatchItem& it : items) verifying += it.tokens.size() > 1 ? 1 : 0;
      st = (*ev)->eval(items);
      EXPECT_TRUE(st.ok()) << st.error().message;
      if (!st.ok()) break;
      ++passes;
      if (verifying >= 2) ++shared;
      for (size_t k = 0; k < who.size(); ++k) {
        Seq& q = seqs[who[k]];
        if (q.spec) {
          st = q.spec->finish(*q.session, *q.gen, (*ev)->logits(k), [&](const GeneratorStep& s) { q.take(s); });
          EXPECT_TRUE(st.ok()) << st.error().message;
        } else {
          q.take(q.gen->step(q.session->last_logits().data(), vocab_, q.session->n_past(), q.session->n_ctx()));
        }
      }
    }
    EXPECT_GT(shared, 3) << "passes verifying the drafts of two sequences or more, of " << passes;
    std::vector<Result1> out;
    out.reserve(seqs.size());
    for (Seq& q : seqs) out.push_back(finish(q));
    return out;
  }

 private:
  Seq make(int i, const SeqSpec& s, const std::vector<int32_t>& truth) {
    Seq q;
    SessionOptions so;
    so.n_ctx = kCtx;
    so.batch = kBatch;
    so.n_threads = 2;
    so.n_checkpoints = 2;
    auto session = Session::create(model_, so);
    EXPECT_TRUE(session.ok()) << session.error().message;
    q.session = std::move(session).value();
    auto tok = model_.tokenizer();
    EXPECT_TRUE(tok.ok());
    GeneratorOptions go;
    go.n_predict = s.n_predict;
    go.stop_at_eog = false;
    go.sampler.temperature = s.temperature;
    go.sampler.seed = 1234 + static_cast<uint64_t>(i);
    auto gen = Generator::create(**tok, go);
    EXPECT_TRUE(gen.ok()) << gen.error().message;
    q.gen.emplace(std::move(gen).value());
    q.gen->accept_prompt(prompt_of(i, s.prompt_len, vocab_));
    if (s.wrong >= 0) {
      q.source = std::make_unique<OracleDraft>(truth, vocab_, static_cast<uint64_t>(s.wrong), 77 + i);
      auto spec = SpeculativeDecoder::create(*q.session, *q.source, SpecConfig{s.draft_max, 0, true});
      EXPECT_TRUE(spec.ok()) << spec.error().message;
      q.spec.emplace(std::move(spec).value());
    }
    return q;
  }

  static Result1 finish(Seq& q) {
    Result1 r = std::move(q.out);
    if (q.spec) r.stats = q.spec->stats();
    r.history = q.session->history();
    r.last_logits = q.session->last_logits();
    return r;
  }

  Model& model_;
  int32_t vocab_;
};

ModelLoadOptions load_options(const std::string& name, bool streamed) {
  ModelLoadOptions lo;
  lo.n_ctx = kCtx;
  lo.batch = kBatch;
  lo.n_checkpoints = 2;
  if (!streamed) return lo;
  lo.residency = ResidencyMode::kStream;
  lo.mem_bytes = 1ull << 30;
  auto probe = Model::load(model_path(name), lo);
  EXPECT_TRUE(probe.ok()) << probe.error().message;
  if (probe.ok()) lo.mem_bytes = (*probe)->plan().min_budget_bytes;  // the fewest expert slots
  return lo;
}

void expect_shared_rounds_equal_alone(const std::string& name, bool streamed) {
  SCOPED_TRACE(name + (streamed ? " streamed" : " resident"));
  auto model = Model::load(model_path(name), load_options(name, streamed));
  ASSERT_TRUE(model.ok()) << model.error().message;
  ASSERT_EQ((*model)->streams(), streamed);
  Runner runner(**model);
  std::vector<std::vector<int32_t>> truths;
  std::vector<Result1> alone;
  for (size_t i = 0; i < kSeqs.size(); ++i) {
    truths.push_back(runner.plain_truth(static_cast<int>(i)));
    alone.push_back(runner.alone(static_cast<int>(i), truths.back()));
  }
  ThreadPool pool(2);
  const std::vector<Result1> together = runner.together(truths, pool);
  ASSERT_EQ(together.size(), kSeqs.size());
  int64_t rejected = 0, rollbacks = 0;
  for (size_t i = 0; i < kSeqs.size(); ++i) {
    SCOPED_TRACE("sequence " + std::to_string(i));
    const Result1& a = alone[i];
    const Result1& b = together[i];
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.text, a.text);
    EXPECT_EQ(static_cast<int64_t>(a.tokens.size()), kSeqs[i].n_predict);
    if (kSeqs[i].temperature == 0) {  // greedy: the plain run's tokens, drafts or not
      const std::vector<int32_t> plain(truths[i].begin() + kSeqs[i].prompt_len, truths[i].end());
      EXPECT_EQ(a.tokens, plain);
    }
    EXPECT_EQ(b.stats.n_rounds, a.stats.n_rounds);
    EXPECT_EQ(b.stats.n_plain, a.stats.n_plain);
    EXPECT_EQ(b.stats.n_backoff, a.stats.n_backoff);
    EXPECT_EQ(b.stats.n_drafted, a.stats.n_drafted);
    EXPECT_EQ(b.stats.n_accepted, a.stats.n_accepted);
    EXPECT_EQ(b.stats.n_rollback_evals, a.stats.n_rollback_evals);
    EXPECT_EQ(b.history, a.history);
    ASSERT_EQ(b.last_logits.size(), a.last_logits.size());
    EXPECT_EQ(std::memcmp(b.last_logits.data(), a.last_logits.data(), a.last_logits.size() * sizeof(float)), 0)
        << "the last logits differ from the run alone";
    rejected += a.stats.n_drafted - a.stats.n_accepted;
    rollbacks += a.stats.n_rollback_evals;
  }
  // The schedule did what it claims: drafts all kept in one sequence, none in another.
  EXPECT_EQ(alone[0].stats.n_accepted, alone[0].stats.n_drafted);
  EXPECT_GT(alone[0].stats.n_drafted, 0);
  EXPECT_EQ(alone[2].stats.n_accepted, 0);
  EXPECT_GT(alone[2].stats.n_backoff, 0);
  EXPECT_GT(rejected, 0);
  SessionOptions so;
  so.n_ctx = kCtx;
  so.batch = kBatch;
  auto probe = Session::create(**model, so);
  ASSERT_TRUE(probe.ok());
  if ((*probe)->state().needs_checkpoints()) {
    EXPECT_GT(rollbacks, 0);  // rejections restored a checkpoint and evaluated the kept tokens again
  }
}

TEST(BatchSpeculative, Dense) { expect_shared_rounds_equal_alone("syn-qwen3-Q4_K_M", false); }

TEST(BatchSpeculative, ExpertsResident) { expect_shared_rounds_equal_alone("syn-qwen3moe-Q4_K_M", false); }

TEST(BatchSpeculative, ExpertsStreamedAtTheSmallestBudget) {
  expect_shared_rounds_equal_alone("syn-qwen3moe-Q4_K_M", true);
}

TEST(BatchSpeculative, DeltaNetHybrid) { expect_shared_rounds_equal_alone("syn-qwen35-Q4_K_M", false); }

// finish() without a begin() whose rows the session evaluated is a programming error.
TEST(BatchSpeculativeDeathTest, FinishWithoutBegin) {
  auto model = Model::load(model_path("syn-qwen3-Q4_K_M"), load_options("syn-qwen3-Q4_K_M", false));
  ASSERT_TRUE(model.ok());
  SessionOptions so;
  so.n_ctx = kCtx;
  so.batch = kBatch;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok());
  const auto vocab = static_cast<int32_t>((*model)->config().vocab_size);
  OracleDraft source({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, vocab, 0, 1);
  auto spec = SpeculativeDecoder::create(**session, source, SpecConfig{4, 0, true});
  ASSERT_TRUE(spec.ok());
  auto tok = (*model)->tokenizer();
  ASSERT_TRUE(tok.ok());
  auto gen = Generator::create(**tok, GeneratorOptions());
  ASSERT_TRUE(gen.ok());
  ASSERT_TRUE((*session)->eval(std::vector<int32_t>{1, 2}).ok());
  std::vector<float> logits(static_cast<size_t>(vocab));
  EXPECT_DEATH((void)spec->finish(**session, *gen, logits, [](const GeneratorStep&) {}), "without a begin");
  auto rows = spec->begin(**session, 3, 10);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->size(), 5u);  // pending + 4 drafts
  // The rows were not evaluated.
  EXPECT_DEATH((void)spec->finish(**session, *gen, logits, [](const GeneratorStep&) {}), "without a begin");
}

}  // namespace
}  // namespace sniper
