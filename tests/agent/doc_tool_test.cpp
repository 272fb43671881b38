// SPDX-License-Identifier: MIT
// /doc against the scripted backend: a file 12 pages long at a 1024-token context is read page
// by page (one note request per page, each holding its page and fitting the context, a
// "page i/12" progress line each), then one answer request holds every note and fits the
// context too; a web page is paged the same way; a context too small is refused before any
// request.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent/paged_reader.h"
#include "agent/scripted_server.h"

namespace sniper::agent {
namespace {

using testing::Rule;
using testing::ScriptedServer;

class DocToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sniper-agent-doc-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    llm_.add_rule({{"Notes taken while reading"}, {}, "The launch code is 4-7-1 [page 7].", 0, 8});
    for (int k = 1; k <= 40; ++k) {
      llm_.add_rule(
          {{"MARKER-" + std::to_string(k) + "-END"}, {"one page at a time"}, "fact-" + std::to_string(k), 0, 64});
    }
    llm_.set_default_reply("nothing relevant");
    ASSERT_TRUE(llm_.start());
    BackendConfig b;
    b.name = "scripted";
    b.url = llm_.url();
    config_.backends = {b};
    config_.read_timeout_s = 2;
    config_.connect_timeout_s = 1;
    config_.doc_context_tokens = 1024;
    config_.doc_note_tokens = 64;
    config_.max_tokens = 128;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cleanup failed\n");
  }
  std::unique_ptr<Agent> make_agent(BackendPool* pool) {
    AgentIo io;
    io.out = &out_;
    io.cwd = dir_;
    io.grade_log = dir_ + "/grades.jsonl";
    return std::make_unique<Agent>(config_, pool, io);
  }
  // A document of n_sections sections of exactly page_chars bytes (one page each), each marked
  // MARKER-k-END in its first line.
  std::string document(int n_sections, size_t page_chars) const {
    std::string doc;
    for (int k = 1; k <= n_sections; ++k) {
      std::string section = "Section " + std::to_string(k) + " MARKER-" + std::to_string(k) + "-END\n";
      while (section.size() + 46 <= page_chars) section += "Filler sentence about nothing in particular.\n";
      section.append(page_chars - 1 - section.size(), '.');
      doc += section + "\n";
    }
    return doc;
  }
  static size_t request_chars(const nlohmann::json& req) {
    size_t n = 0;
    for (const auto& m : req["messages"]) n += m["content"].get<std::string>().size();
    return n;
  }

  std::string dir_;
  ScriptedServer llm_;
  AgentConfig config_;
  std::ostringstream out_;
};

TEST_F(DocToolTest, LongFileIsReadPageByPageThenAnsweredFromTheNotes) {
  const std::string question = "What is the launch code?";
  auto budget = paging_budget(config_.doc_context_tokens, config_.doc_note_tokens, config_.max_tokens, question.size());
  ASSERT_TRUE(budget.ok());
  std::ofstream(dir_ + "/big.txt") << document(12, budget->page_chars);
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/doc big.txt " + question);
  const std::string shown = out_.str();
  const auto reqs = llm_.requests();
  ASSERT_EQ(reqs.size(), 13u) << shown;  // 12 pages, then the answer
  const size_t n_pages = reqs.size() - 1;
  EXPECT_NE(shown.find("page 1/" + std::to_string(n_pages)), std::string::npos) << shown;
  EXPECT_NE(shown.find("page " + std::to_string(n_pages) + "/" + std::to_string(n_pages)), std::string::npos);
  const size_t ctx_chars = static_cast<size_t>(config_.doc_context_tokens) * kCharsPerToken;
  for (size_t i = 0; i < n_pages; ++i) {
    const std::string user = reqs[i]["messages"].back()["content"].get<std::string>();
    EXPECT_NE(user.find("Page " + std::to_string(i + 1) + " of " + std::to_string(n_pages)), std::string::npos);
    EXPECT_NE(user.find(question), std::string::npos);
    EXPECT_LE(request_chars(reqs[i]) + static_cast<size_t>(config_.doc_note_tokens) * kCharsPerToken, ctx_chars);
  }
  // Every section was sent in some page.
  std::string sent;
  for (size_t i = 0; i < n_pages; ++i) sent += reqs[i]["messages"].back()["content"].get<std::string>();
  for (int k = 1; k <= 12; ++k) EXPECT_NE(sent.find("MARKER-" + std::to_string(k) + "-END"), std::string::npos) << k;
  // The answer request: the question and every page's note, inside the context with the answer.
  const nlohmann::json& last = reqs.back();
  const std::string final_user = last["messages"].back()["content"].get<std::string>();
  EXPECT_NE(final_user.find(question), std::string::npos);
  for (int k = 1; k <= 12; ++k)
    EXPECT_NE(final_user.find("fact-" + std::to_string(k)), std::string::npos) << final_user;
  EXPECT_EQ(final_user.find("MARKER-"), std::string::npos);  // notes, not pages
  EXPECT_LE(request_chars(last) + static_cast<size_t>(config_.max_tokens) * kCharsPerToken, ctx_chars);
  EXPECT_NE(shown.find("The launch code is 4-7-1 [page 7]."), std::string::npos) << shown;
  ASSERT_EQ(agent->conversation().messages().size(), 2u);
}

TEST_F(DocToolTest, ManyNotesAreCondensedToFitTheAnswerRequest) {
  config_.doc_context_tokens = 600;
  config_.doc_note_tokens = 200;
  config_.max_tokens = 128;
  // A backend of its own whose notes are long: two of them outgrow the answer request.
  ScriptedServer llm;
  llm.add_rule({{}, {"Condense these notes"}, "condensed-notes", 0, 64});
  llm.add_rule({{"Notes taken while reading"}, {}, "answer", 0, 64});
  for (int k = 1; k <= 40; ++k) {
    llm.add_rule({{"MARKER-" + std::to_string(k) + "-END"}, {"one page at a time"}, std::string(500, 'n'), 0, 512});
  }
  ASSERT_TRUE(llm.start());
  config_.backends[0].url = llm.url();
  const std::string question = "q?";
  auto budget = paging_budget(config_.doc_context_tokens, config_.doc_note_tokens, config_.max_tokens, question.size());
  ASSERT_TRUE(budget.ok());
  std::ofstream(dir_ + "/big.txt") << document(10, budget->page_chars);
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/doc big.txt " + question);
  const auto reqs = llm.requests();
  ASSERT_FALSE(reqs.empty());
  const std::string final_user = reqs.back()["messages"].back()["content"].get<std::string>();
  EXPECT_NE(final_user.find("condensed-notes"), std::string::npos) << final_user;
  const size_t ctx_chars = static_cast<size_t>(config_.doc_context_tokens) * kCharsPerToken;
  for (const auto& r : reqs) EXPECT_LE(request_chars(r), ctx_chars);
}

TEST_F(DocToolTest, WebPageIsPagedToo) {
  ScriptedServer web;
  const std::string question = "What is the code?";
  auto budget = paging_budget(config_.doc_context_tokens, config_.doc_note_tokens, config_.max_tokens, question.size());
  ASSERT_TRUE(budget.ok());
  web.add_page("/long", document(5, budget->page_chars), "text/plain");
  ASSERT_TRUE(web.start());
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/doc " + web.url() + "/long " + question);
  const auto reqs = llm_.requests();
  ASSERT_EQ(reqs.size(), 6u) << out_.str();
  const std::string final_user = reqs.back()["messages"].back()["content"].get<std::string>();
  for (int k = 1; k <= 5; ++k) EXPECT_NE(final_user.find("fact-" + std::to_string(k)), std::string::npos) << final_user;
}

TEST_F(DocToolTest, UsageAndErrorsSendNothing) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/doc missing.txt what?");
  EXPECT_NE(out_.str().find("missing.txt"), std::string::npos) << out_.str();
  agent->handle_line("/doc onlyafile");
  EXPECT_NE(out_.str().find("usage: /doc"), std::string::npos);
  EXPECT_EQ(llm_.chat_requests(), 0);
}

}  // namespace
}  // namespace sniper::agent
