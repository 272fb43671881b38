// SPDX-License-Identifier: MIT
// `serve --spec-type ngram` and `serve -md DRAFT`: every slot decodes speculatively; greedy
// completions equal those of a server without drafts (also two at once on two slots, each with
// its own draft session), the response usage reports accepted and rejected draft tokens, and
// /metrics counts them. Sampled jobs complete with drafts; grammar-constrained jobs draft
// nothing; a draft whose vocabulary differs is refused when the server starts. `serve --spec-type
// mtp` drafts with the model's own MTP head on a synthetic Qwen3.5 file that carries one.
// Several speculative slots at once verify their drafts in shared passes, each client getting
// its solo text and draft counts, beside a grammar job and a client that hangs up.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <latch>
#include <thread>
#include <utility>

#include "gguf/writer.h"
#include "server/test_server.h"
#include "synth/synth_model.h"
#include "tokenizer/tokenizer.h"

namespace sniper::server {
namespace {

std::string stories() { return shared_dir() + "/models/stories260K.gguf"; }

TJson post(TestServer& s, const TJson& body) {
  auto r = s.client()->Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(r) << "no response";
  if (!r) return TJson();
  EXPECT_EQ(r->status, 200) << r->body;
  return TJson::parse(r->body);
}

TJson complete(TestServer& s, const std::string& prompt) {
  return post(s, {{"prompt", prompt}, {"max_tokens", 80}, {"temperature", 0}});
}

// Greedy completions of `prompts` from both servers must be identical; returns the speculative
// server's accepted and rejected draft tokens over them.
std::pair<int64_t, int64_t> expect_same_greedy(TestServer& plain, TestServer& spec,
                                               std::initializer_list<const char*> prompts) {
  int64_t accepted = 0, rejected = 0;
  for (const char* prompt : prompts) {
    SCOPED_TRACE(prompt);
    const TJson a = complete(plain, prompt);
    const TJson b = complete(spec, prompt);
    EXPECT_TRUE(a.contains("choices") && b.contains("choices")) << a.dump() << b.dump();
    if (!a.contains("choices") || !b.contains("choices")) continue;
    EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
    EXPECT_EQ(b["usage"]["completion_tokens"], a["usage"]["completion_tokens"]);
    EXPECT_FALSE(a["usage"].contains("completion_tokens_details"));
    const TJson& d = b["usage"]["completion_tokens_details"];
    EXPECT_TRUE(d.is_object()) << b.dump();
    if (!d.is_object()) continue;
    accepted += d["accepted_prediction_tokens"].get<int64_t>();
    rejected += d["rejected_prediction_tokens"].get<int64_t>();
  }
  return {accepted, rejected};
}

// The draft model as serve loads it: planned for one session per slot of the test's context.
std::unique_ptr<Model> load_draft(const std::string& path, int n_slots) {
  ModelLoadOptions lo;
  lo.n_ctx = 512;
  lo.n_sessions = n_slots;
  auto m = Model::load(path, lo);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m).value() : nullptr;
}

std::string stories_q8() { return shared_dir() + "/models/stories260K-Q8_0.gguf"; }

int64_t metric_value(TestServer& s, const std::string& name) {
  auto m = s.client()->Get("/metrics");
  EXPECT_TRUE(m);
  if (!m) return -1;
  const size_t at = m->body.find("\n" + name + " ");
  EXPECT_NE(at, std::string::npos) << name;
  if (at == std::string::npos) return -1;
  return std::stoll(m->body.substr(at + name.size() + 2));
}

TEST(ServerSpeculative, GreedyEqualsPlainAndUsageCountsDrafts) {
  ServerOptions plain_options;
  TestServer plain(stories(), plain_options);
  ASSERT_TRUE(plain.ok()) << plain.error();
  ServerOptions spec_options;
  spec_options.spec_ngram_size = 3;
  spec_options.spec = SpecConfig{8, 0, true};
  TestServer spec(stories(), spec_options);
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto [accepted, rejected] =
      expect_same_greedy(plain, spec, {"Once upon a time", "The little dog", "Lily and Tom went to the park"});
  EXPECT_GT(accepted, 0);  // stories repeat themselves: n-gram lookup pays
  auto m = spec.client()->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("sniper_draft_accepted_tokens_total " + std::to_string(accepted)), std::string::npos)
      << m->body;
  EXPECT_NE(m->body.find("sniper_draft_tokens_total " + std::to_string(accepted + rejected)), std::string::npos);
}

// One request of the shared-pass test: its body, and whether it hangs up after its first piece.
struct SpecRequest {
  TJson body;
  bool hang_up = false;
};

// The text and the accepted and rejected draft tokens of one completion (streamed with usage or
// not); empty on a hang-up.
struct SpecReply {
  std::string text;
  int64_t accepted = -1, rejected = -1;
};

SpecReply send(TestServer& s, const SpecRequest& q) {
  auto cli = s.client();
  if (q.hang_up) {
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = q.body.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };
    (void)cli->send(req);
    return {};
  }
  auto r = cli->Post("/v1/completions", q.body.dump(), "application/json");
  EXPECT_TRUE(r);
  if (!r) return {};
  EXPECT_EQ(r->status, 200) << r->body;
  SpecReply out;
  TJson usage;
  if (q.body.value("stream", false)) {
    bool done = false;
    for (const auto& c : parse_sse(r->body, &done)) {
      if (c.contains("choices") && !c["choices"].empty()) out.text += c["choices"][0]["text"].get<std::string>();
      if (c.contains("usage") && c["usage"].is_object()) usage = c["usage"];
    }
    EXPECT_TRUE(done);
  } else {
    const TJson b = TJson::parse(r->body);
    out.text = b["choices"][0]["text"].get<std::string>();
    usage = b["usage"];
  }
  if (usage.contains("completion_tokens_details")) {
    out.accepted = usage["completion_tokens_details"]["accepted_prediction_tokens"].get<int64_t>();
    out.rejected = usage["completion_tokens_details"]["rejected_prediction_tokens"].get<int64_t>();
  }
  return out;
}

// Several speculative slots at once (greedy, streamed, a stop string, sampled with a seed) beside
// a grammar job that decodes plainly and a client that hangs up mid-stream: their drafts are
// verified in shared passes (more verification rows than passes), and each client gets the text
// and the accepted and rejected draft counts of its request alone (a quantized model: each
// row's logits are its solo run's; n-gram drafts depend on the slot's own history only). The
// slots all come free, and a request afterwards still answers its solo text.
TEST(ServerSpeculative, SlotsShareTheVerificationPass) {
  ServerOptions o;
  o.n_slots = 6;
  o.queue_capacity = 4;
  o.session.batch = 16;
  o.spec_ngram_size = 2;
  o.spec = SpecConfig{6, 0, true};
  TestServer server(models_dir() + "/stories260K-Q8_0.gguf", o, 1024);
  ASSERT_TRUE(server.ok()) << server.error();
  auto body = [](const char* prompt) {
    return TJson{{"prompt", prompt}, {"max_tokens", 48}, {"temperature", 0}, {"ignore_eos", true}};
  };
  std::vector<SpecRequest> reqs = {
      {body("Once upon a time")}, {body("The little dog")}, {body("Lily and Tom went to the park")},
      {body("One day a bird")},   {body("Tom and Sam")},    {body("The sun was")}};
  reqs[1].body["stream"] = true;
  reqs[1].body["stream_options"] = {{"include_usage", true}};
  reqs[3].body["temperature"] = 0.8;
  reqs[3].body["top_k"] = 20;
  reqs[3].body["seed"] = 7;
  reqs[4].body["grammar"] = "root ::= [a-z ]+";
  reqs[5].body["stream"] = true;
  reqs[5].body["max_tokens"] = 2000;
  reqs[5].hang_up = true;
  std::vector<SpecReply> solo(5);
  for (int i = 0; i < 5; ++i) solo[i] = send(server, reqs[i]);
  ASSERT_GT(solo[2].text.size(), 16u) << solo[2].text;
  reqs[2].body["stop"] = TJson::array({solo[2].text.substr(12, 4)});
  solo[2] = send(server, reqs[2]);
  int64_t drafted = 0;
  for (int i : {0, 1, 2, 3}) {
    EXPECT_GE(solo[i].accepted, 0) << "request " << i << " did not decode speculatively";
    drafted += solo[i].accepted + solo[i].rejected;
  }
  EXPECT_GT(drafted, 0);
  EXPECT_EQ(solo[4].accepted, -1) << "a grammar job drafts nothing";
  const int64_t passes0 = metric_value(server, "sniper_batch_passes_total");
  const int64_t seqs0 = metric_value(server, "sniper_batch_sequences_total");
  const int64_t rows0 = metric_value(server, "sniper_batch_rows_total");
  std::vector<SpecReply> got(reqs.size());
  std::latch go(static_cast<std::ptrdiff_t>(reqs.size()));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < reqs.size(); ++i) {
    threads.emplace_back([&, i] {
      go.arrive_and_wait();
      got[i] = send(server, reqs[i]);
    });
  }
  for (auto& t : threads) t.join();
  int64_t drafted_together = 0;
  for (int i = 0; i < 5; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    if (got[i].accepted >= 0) drafted_together += got[i].accepted + got[i].rejected;
    EXPECT_EQ(got[i].text, solo[i].text);
    EXPECT_EQ(got[i].accepted, solo[i].accepted);
    EXPECT_EQ(got[i].rejected, solo[i].rejected);
  }
  EXPECT_TRUE(wait_for_metric(server, "sniper_requests_total{endpoint=\"completions\",status=\"cancelled\"} 1\n"));
  EXPECT_TRUE(wait_for_metric(server, "sniper_slots_busy 0\n"));
  const int64_t passes = metric_value(server, "sniper_batch_passes_total") - passes0;
  const int64_t seqs = metric_value(server, "sniper_batch_sequences_total") - seqs0;
  const int64_t rows = metric_value(server, "sniper_batch_rows_total") - rows0;
  EXPECT_GT(seqs, passes + passes / 2) << seqs << " sequences in " << passes << " passes";
  // A verification brings 1 + k rows of one sequence to its pass: every draft was verified in a
  // shared pass (prompt chunks only add to the rows).
  EXPECT_GE(rows - seqs, drafted_together) << rows << " rows of " << seqs << " sequences";
  EXPECT_EQ(send(server, reqs[0]).text, solo[0].text);
  EXPECT_TRUE(wait_for_metric(server, "sniper_slots_busy 0\n"));
}

TEST(ServerSpeculative, BadDraftSettingsAreRefusedAtStart) {
  ServerOptions o;
  o.spec_ngram_size = 3;
  o.spec = SpecConfig{4, 9, true};
  TestServer s(stories(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("--draft-min is 9"), std::string::npos) << s.error();
}

TEST(ServerMtp, GreedyEqualsPlainAndUsageCountsDrafts) {
  const std::string path = ::testing::TempDir() + "/sniper_server_mtp_qwen35.gguf";
  SynthSpec synth;
  synth.arch = "qwen35";
  synth.dim = 128;
  synth.n_layers = 4;
  synth.head_dim = 32;
  synth.hidden_dim = 256;
  synth.ssm_state = 32;
  synth.nextn_layers = 1;
  synth.n_ctx = 1024;
  synth.n_threads = 2;
  ASSERT_TRUE(write_synth_model(synth, path, nullptr).ok());
  ServerOptions plain_options;
  plain_options.session.n_checkpoints = 2;
  TestServer plain(path, plain_options);
  ASSERT_TRUE(plain.ok()) << plain.error();
  ServerOptions o = plain_options;
  o.spec_mtp = true;
  o.spec = SpecConfig{4, 0, true};
  TestServer spec(path, o);
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto [accepted, rejected] = expect_same_greedy(plain, spec, {"hello world", "the dog went", "hello world"});
  EXPECT_GT(accepted + rejected, 0);  // random weights: the head drafts, verification rejects
  EXPECT_EQ(metric_value(spec, "sniper_draft_tokens_total"), accepted + rejected);
  // And a model without an MTP block serves plainly under --spec-type mtp (a pool of models).
  TestServer no_block(stories(), o);
  ASSERT_TRUE(no_block.ok()) << no_block.error();
  const TJson r = complete(no_block, "Once upon a time");
  EXPECT_FALSE(r["usage"].contains("completion_tokens_details")) << r.dump();
}

TEST(ServerDraftModel, GreedyEqualsPlainAndUsageCountsDrafts) {
  TestServer plain(stories(), ServerOptions());
  ASSERT_TRUE(plain.ok()) << plain.error();
  std::unique_ptr<Model> draft = load_draft(stories_q8(), 1);
  ASSERT_NE(draft, nullptr);
  ServerOptions o;
  o.draft_model = draft.get();
  o.spec = SpecConfig{6, 0, true};
  TestServer spec(stories(), o);
  ASSERT_TRUE(spec.ok()) << spec.error();
  const auto [accepted, rejected] =
      expect_same_greedy(plain, spec, {"Once upon a time", "The little dog", "Once upon a time, there was"});
  // The Q8_0 copy of the target agrees with it on almost every greedy token.
  EXPECT_GT(accepted, 4 * rejected);
  EXPECT_EQ(metric_value(spec, "sniper_draft_accepted_tokens_total"), accepted);
  EXPECT_EQ(metric_value(spec, "sniper_draft_tokens_total"), accepted + rejected);
}

TEST(ServerDraftModel, TwoSlotsAtOnceEachEqualPlain) {
  TestServer plain(stories(), ServerOptions());
  ASSERT_TRUE(plain.ok()) << plain.error();
  std::unique_ptr<Model> draft = load_draft(stories_q8(), 2);
  ASSERT_NE(draft, nullptr);
  ServerOptions o;
  o.n_slots = 2;
  o.draft_model = draft.get();
  o.spec = SpecConfig{4, 0, true};
  TestServer spec(stories(), o);
  ASSERT_TRUE(spec.ok()) << spec.error();
  const std::string prompts[2] = {"Lily and Tom went to the park", "The cat sat"};
  std::string expected[2];
  for (int i = 0; i < 2; ++i) expected[i] = complete(plain, prompts[i])["choices"][0]["text"].get<std::string>();
  for (int round = 0; round < 2; ++round) {  // the second round reuses the slots' draft sessions
    TJson got[2];
    std::thread a([&] { got[0] = complete(spec, prompts[0]); });
    std::thread b([&] { got[1] = complete(spec, prompts[1]); });
    a.join();
    b.join();
    for (int i = 0; i < 2; ++i) {
      SCOPED_TRACE(prompts[i]);
      ASSERT_TRUE(got[i].contains("choices")) << got[i].dump();
      EXPECT_EQ(got[i]["choices"][0]["text"], expected[i]);
      EXPECT_GT(got[i]["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int64_t>(), 0);
    }
  }
}

TEST(ServerDraftModel, SampledAndConstrainedJobs) {
  std::unique_ptr<Model> draft = load_draft(stories_q8(), 1);
  ASSERT_NE(draft, nullptr);
  ServerOptions o;
  o.draft_model = draft.get();
  o.spec = SpecConfig{4, 0, true};
  TestServer spec(stories(), o);
  ASSERT_TRUE(spec.ok()) << spec.error();
  // Sampled: the draft draws with the job's settings; the usage adds up.
  for (const double temp : {0.8, 1.5}) {
    SCOPED_TRACE(temp);
    const TJson r = post(spec, {{"prompt", "Once upon a time"},
                                {"max_tokens", 40},
                                {"temperature", temp},
                                {"top_k", 20},
                                {"top_p", 0.9},
                                {"min_p", 0.02},
                                {"seed", 7}});
    ASSERT_TRUE(r.contains("usage")) << r.dump();
    const int64_t n = r["usage"]["completion_tokens"].get<int64_t>();
    EXPECT_GT(n, 0);
    EXPECT_LE(n, 40);
    const TJson& d = r["usage"]["completion_tokens_details"];
    const int64_t acc = d["accepted_prediction_tokens"].get<int64_t>();
    const int64_t rej = d["rejected_prediction_tokens"].get<int64_t>();
    EXPECT_GE(acc, 0);
    EXPECT_GE(rej, 0);
    EXPECT_GT(acc + rej, 0);  // it did draft
    EXPECT_LT(acc, n);        // every round emits one token of the target's own
  }
  const int64_t drafted_before = metric_value(spec, "sniper_draft_tokens_total");
  // Constrained: a grammar masks every token, so the job decodes without drafts.
  const TJson schema = {{"type", "object"},
                        {"properties", {{"ok", {{"type", "boolean"}}}}},
                        {"required", {"ok"}},
                        {"additionalProperties", false}};
  const TJson r = post(
      spec, {{"prompt", "Once upon a time"},
             {"max_tokens", 40},
             {"temperature", 0},
             {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}});
  ASSERT_TRUE(r.contains("choices")) << r.dump();
  // The tiny model pads with whitespace, so 40 tokens may end mid-object: the grammar held if
  // the text is the schema's object so far.
  const std::string text = r["choices"][0]["text"].get<std::string>();
  const size_t brace = text.find_first_not_of(" \t\n");
  ASSERT_NE(brace, std::string::npos) << text;
  EXPECT_EQ(text[brace], '{') << text;
  EXPECT_FALSE(r["usage"].contains("completion_tokens_details")) << r.dump();
  EXPECT_EQ(metric_value(spec, "sniper_draft_tokens_total"), drafted_before);
}

// A copy of stories260K-Q8_0 whose token `id` reads `text` (every model in ../shared/models has
// the stories vocabulary, so the test makes the one that differs).
std::string write_renamed_token_copy(const std::string& dir, int32_t id, const std::string& text) {
  auto file = gguf_open(stories_q8());
  EXPECT_TRUE(file.ok());
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok.ok());
  if (!file.ok() || !tok.ok()) return "";
  GgufWriter w;
  for (const auto& [key, value] : file->metadata()) w.set_value(key, value);
  std::vector<std::string> texts = tok->vocab().texts;
  texts[static_cast<size_t>(id)] = text;
  w.set_string_array("tokenizer.ggml.tokens", texts);
  std::ifstream in(stories_q8(), std::ios::binary);
  for (const GgufTensorInfo& t : file->tensors()) {
    std::vector<uint8_t> bytes(t.nbytes);
    in.seekg(static_cast<std::streamoff>(t.file_offset));
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    EXPECT_TRUE(in.good()) << t.name;
    w.add_tensor_bytes(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), std::move(bytes));
  }
  std::string path = dir + "/other-vocab.gguf";
  Status st = w.write(path);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return path;
}

TEST(ServerDraftModel, IncompatibleVocabularyIsAStartupError) {
  char dir_template[] = "/var/tmp/sniper-spec-vocab.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string path = write_renamed_token_copy(dir, 300, "<not-a-story-token>");
  std::unique_ptr<Model> draft = load_draft(path, 1);
  std::filesystem::remove_all(dir);
  ASSERT_NE(draft, nullptr);
  ServerOptions o;
  o.draft_model = draft.get();
  TestServer s(stories(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("draft model " + path), std::string::npos) << s.error();
  EXPECT_NE(s.error().find("vocabulary is incompatible: token 300 is '<not-a-story-token>' in the draft"),
            std::string::npos)
      << s.error();
}

TEST(ServerDraftModel, NonsenseCombinationsAreRefused) {
  std::unique_ptr<Model> draft = load_draft(stories_q8(), 1);
  ASSERT_NE(draft, nullptr);
  {
    ServerOptions o;
    o.draft_model = draft.get();
    o.spec_ngram_size = 3;
    TestServer s(stories(), o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find("one draft source"), std::string::npos) << s.error();
  }
  {
    ServerOptions o;
    o.draft_model = draft.get();
    o.context_shift = true;
    TestServer s(stories(), o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find("--context-shift"), std::string::npos) << s.error();
  }
  {
    ServerOptions o;
    o.draft_model = draft.get();
    o.session.batch = 4;
    o.spec = SpecConfig{8, 0, true};
    TestServer s(stories(), o);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().find("--draft-max 8"), std::string::npos) << s.error();
  }
}

}  // namespace
}  // namespace sniper::server
