// SPDX-License-Identifier: MIT
// `serve --spec-type ngram`: every slot decodes speculatively; greedy completions equal those of
// a server without drafts, the response usage reports accepted and rejected draft tokens, and
// /metrics counts them.
#include <gtest/gtest.h>

#include "server/test_server.h"

namespace sniper::server {
namespace {

std::string stories() { return shared_dir() + "/models/stories260K.gguf"; }

TJson complete(TestServer& s, const std::string& prompt) {
  const TJson body = {{"prompt", prompt}, {"max_tokens", 80}, {"temperature", 0}};
  auto r = s.client()->Post("/v1/completions", body.dump(), "application/json");
  EXPECT_TRUE(r) << "no response";
  if (!r) return TJson();
  EXPECT_EQ(r->status, 200) << r->body;
  return TJson::parse(r->body);
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
  int64_t accepted = 0, rejected = 0;
  for (const char* prompt : {"Once upon a time", "The little dog", "Lily and Tom went to the park"}) {
    SCOPED_TRACE(prompt);
    const TJson a = complete(plain, prompt);
    const TJson b = complete(spec, prompt);
    ASSERT_TRUE(a.contains("choices") && b.contains("choices"));
    EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
    EXPECT_EQ(b["usage"]["completion_tokens"], a["usage"]["completion_tokens"]);
    EXPECT_FALSE(a["usage"].contains("completion_tokens_details"));
    const TJson& d = b["usage"]["completion_tokens_details"];
    accepted += d["accepted_prediction_tokens"].get<int64_t>();
    rejected += d["rejected_prediction_tokens"].get<int64_t>();
  }
  EXPECT_GT(accepted, 0);  // stories repeat themselves: n-gram lookup pays
  auto m = spec.client()->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("sniper_draft_accepted_tokens_total " + std::to_string(accepted)), std::string::npos) << m->body;
  EXPECT_NE(m->body.find("sniper_draft_tokens_total " + std::to_string(accepted + rejected)), std::string::npos);
}

TEST(ServerSpeculative, BadDraftSettingsAreRefusedAtStart) {
  ServerOptions o;
  o.spec_ngram_size = 3;
  o.spec = SpecConfig{4, 9, true};
  TestServer s(stories(), o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("--draft-min is 9"), std::string::npos) << s.error();
}

}  // namespace
}  // namespace sniper::server
