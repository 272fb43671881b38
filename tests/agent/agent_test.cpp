// SPDX-License-Identifier: MIT
// The agent core end to end without a terminal: routed web search against a local server serving
// saved result and article pages (citations in the answer, sources listed), routed shell commands
// with and without confirmation, failover marking, slash commands, /btw, /branch, /good.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent/scripted_server.h"
#include "agent/web_search.h"

namespace sniper::agent {
namespace {

using testing::Rule;
using testing::ScriptedServer;

std::string data(const std::string& name) {
  return testing::read_test_file(std::string(SNIPER_AGENT_TEST_DATA) + "/" + name);
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sniper-agent-core-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    // Routing.
    llm_.add_rule({{"Answer with one word", "news"}, {}, "Search.", 0, 6});
    llm_.add_rule({{"Answer with one word", "files"}, {}, "**shell**", 0, 6});
    llm_.add_rule({{"Answer with one word", "delete"}, {}, "shell", 0, 6});
    llm_.add_rule({{"Answer with one word"}, {}, "<think>\n</think>\nchat", 0, 6});
    // Tools.
    llm_.add_rule({{}, {"search query"}, "\"sniper engine\"", 0, 6});
    llm_.add_rule({{"files"}, {"shell command"}, "```sh\nls\n```", 0, 6});
    llm_.add_rule({{"delete"}, {"shell command"}, "rm -f precious.txt", 0, 6});
    llm_.add_rule({{"numbered sources", "Streaming experts"},
                   {},
                   "Sniper is a CPU LLM engine [1] that streams experts from SSD [2].",
                   0,
                   6});
    llm_.add_rule({{}, {"Summarize the conversation"}, "We talked about engines.", 0, 6});
    llm_.set_default_reply("A **plain** chat answer.");
    ASSERT_TRUE(llm_.start());
    web_.add_page("/html/", data("ddg_results.html"));
    web_.add_page("/article/sniper", data("article_sniper.html"));
    web_.add_page("/article/experts", data("article_experts.html"));
    ASSERT_TRUE(web_.start());
    config_.backends = {};
    BackendConfig b;
    b.name = "scripted";
    b.url = llm_.url();
    config_.backends.push_back(b);
    config_.search_url = web_.url() + "/html/";
    config_.read_timeout_s = 2;
    config_.connect_timeout_s = 1;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cleanup failed\n");
  }
  std::unique_ptr<Agent> make_agent(BackendPool* pool, bool confirm_answer) {
    AgentIo io;
    io.out = &out_;
    io.confirm = [this, confirm_answer](const std::string& q) {
      questions_.push_back(q);
      return confirm_answer;
    };
    io.cwd = dir_;
    io.grade_log = dir_ + "/grades.jsonl";
    return std::make_unique<Agent>(config_, pool, io);
  }

  std::string dir_;
  ScriptedServer llm_, web_;
  AgentConfig config_;
  std::ostringstream out_;
  std::vector<std::string> questions_;
};

TEST_F(AgentTest, RoutedSearchCitesSources) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  EXPECT_TRUE(agent->handle_line("what is the latest sniper news?"));
  std::string o = out_.str();
  EXPECT_NE(o.find("-> search"), std::string::npos) << o;
  EXPECT_NE(o.find("searching: sniper engine"), std::string::npos) << o;
  EXPECT_NE(o.find("Sniper is a CPU LLM engine [1] that streams experts from SSD [2]."), std::string::npos) << o;
  EXPECT_NE(o.find("[1] Sniper: a CPU LLM engine \u2014 overview - " + web_.url() + "/article/sniper"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("[2] Streaming experts from SSD | Engine notes - " + web_.url() + "/article/experts"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("(snippet only)"), std::string::npos) << o;  // the missing page fell back to its snippet
  // The answer prompt carried the page texts.
  bool saw_sources = false;
  for (const auto& req : llm_.requests()) {
    std::string last = req["messages"].back()["content"].get<std::string>();
    if (last.find("numbered sources") == std::string::npos) continue;
    saw_sources = true;
    EXPECT_NE(last.find("ordinary CPUs & streams weights"), std::string::npos);
    EXPECT_NE(last.find("LRU cache"), std::string::npos);
    EXPECT_NE(last.find("quantized kernels"), std::string::npos);
    EXPECT_EQ(last.find("<script"), std::string::npos);
  }
  EXPECT_TRUE(saw_sources);
  ASSERT_EQ(agent->conversation().messages().size(), 2u);
  EXPECT_NE(agent->conversation().messages()[1].content.find("Sources:"), std::string::npos);
}

TEST_F(AgentTest, SearchCommandUsesTheQueryAsIs) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("/search Streaming experts");
  EXPECT_NE(out_.str().find("searching: Streaming experts"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("Sources:"), std::string::npos);
}

TEST_F(AgentTest, RoutedShellReadOnlyRunsWithoutAsking) {
  std::ofstream(dir_ + "/hello.txt") << "hi\n";
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("show me the files here");
  std::string o = out_.str();
  EXPECT_NE(o.find("-> shell"), std::string::npos) << o;
  EXPECT_NE(o.find("$ ls"), std::string::npos) << o;
  EXPECT_NE(o.find("hello.txt"), std::string::npos) << o;
  EXPECT_NE(o.find("[exit 0"), std::string::npos) << o;
  EXPECT_TRUE(questions_.empty());
}

TEST_F(AgentTest, DestructiveShellRefusedWithoutConfirmation) {
  std::string victim = dir_ + "/precious.txt";
  std::ofstream(victim) << "keep\n";
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("delete precious.txt");
  ASSERT_EQ(questions_.size(), 1u);
  EXPECT_NE(questions_[0].find("rm -f precious.txt"), std::string::npos);
  EXPECT_NE(out_.str().find("(not run)"), std::string::npos) << out_.str();
  EXPECT_EQ(::access(victim.c_str(), F_OK), 0);
  auto yes = make_agent(&pool, true);
  yes->handle_line("/shell rm -f precious.txt");
  EXPECT_NE(::access(victim.c_str(), F_OK), 0);
}

TEST_F(AgentTest, ChatFallbackIsMarked) {
  BackendConfig down;
  down.name = "down";
  down.url = testing::closed_port_url();
  config_.backends.insert(config_.backends.begin(), down);
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("/raw");
  agent->handle_line("hello there");
  std::string o = out_.str();
  EXPECT_NE(o.find("A **plain** chat answer."), std::string::npos) << o;  // no colour: markdown as-is
  EXPECT_NE(o.find("[fallback: scripted]"), std::string::npos) << o;
  EXPECT_NE(o.find("down: down"), std::string::npos) << o;  // the failed attempt is reported
}

TEST_F(AgentTest, SlashCommands) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("hello");  // routed to chat
  EXPECT_EQ(agent->conversation().messages().size(), 2u);
  agent->handle_line("/sta");
  EXPECT_NE(out_.str().find("answers 1"), std::string::npos) << out_.str();
  agent->handle_line("/st");
  EXPECT_NE(out_.str().find("/st is ambiguous: /stats /stop"), std::string::npos);
  agent->handle_line("/branch b1");
  agent->handle_line("/btw side question");
  EXPECT_EQ(agent->conversation().messages().size(), 2u);  // /btw stays out of the history
  agent->handle_line("another turn");
  EXPECT_EQ(agent->conversation().messages().size(), 4u);
  agent->handle_line("/restore b1");
  EXPECT_EQ(agent->conversation().messages().size(), 2u);
  agent->handle_line("/good");
  std::string grades = testing::read_test_file(dir_ + "/grades.jsonl");
  EXPECT_NE(grades.find("\"grade\":\"good\""), std::string::npos) << grades;
  agent->handle_line("/improve");
  EXPECT_NE(out_.str().find("1 graded answers: 1 good"), std::string::npos) << out_.str();
  agent->handle_line("/compact");
  ASSERT_EQ(agent->conversation().messages().size(), 1u);
  EXPECT_NE(agent->conversation().messages()[0].content.find("We talked about engines."), std::string::npos);
  agent->handle_line("/save conv.md");
  EXPECT_NE(testing::read_test_file(dir_ + "/conv.md").find("We talked about engines."), std::string::npos);
  agent->handle_line("/think on");
  EXPECT_TRUE(agent->thinking());
  agent->handle_line("/auto off");
  EXPECT_FALSE(agent->auto_tiers());
  agent->handle_line("/cost");
  EXPECT_NE(out_.str().find("saved vs gpt-4o"), std::string::npos);
  agent->handle_line("/model");
  EXPECT_NE(out_.str().find("scripted"), std::string::npos);
  agent->handle_line("/bench");
  EXPECT_NE(out_.str().find("bench scripted:"), std::string::npos) << out_.str();
  agent->handle_line("/system be brief");
  EXPECT_EQ(agent->conversation().system(), "be brief");
  agent->handle_line("/clear");
  EXPECT_TRUE(agent->conversation().empty());
  agent->handle_line("/nope");
  EXPECT_NE(out_.str().find("unknown command /nope"), std::string::npos);
  EXPECT_FALSE(agent->handle_line("/quit"));
}

TEST_F(AgentTest, LoopRunsUntilStopped) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("/loop 1h ping");
  EXPECT_TRUE(agent->loop_active());
  EXPECT_NE(out_.str().find("[loop] ping"), std::string::npos);
  EXPECT_FALSE(agent->loop_due(std::chrono::steady_clock::now()));
  EXPECT_TRUE(agent->loop_due(std::chrono::steady_clock::now() + std::chrono::hours(2)));
  agent->handle_line("/stop");
  EXPECT_FALSE(agent->loop_active());
  EXPECT_EQ(parse_interval("30s"), 30.0);
  EXPECT_EQ(parse_interval("5m"), 300.0);
  EXPECT_FALSE(parse_interval("soon").has_value());
  EXPECT_FALSE(parse_interval("0").has_value());
}

TEST_F(AgentTest, EditFileShowsDiffAndAsks) {
  std::ofstream(dir_ + "/notes.txt") << "one\ntwo\n";
  llm_.add_rule({{"Instruction: capitalise"}, {}, "```\nONE\ntwo\n```", 0, 6});
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  agent->handle_line("/edit notes.txt capitalise the first line");
  EXPECT_NE(out_.str().find("-one\n+ONE\n"), std::string::npos) << out_.str();
  ASSERT_EQ(questions_.size(), 1u);
  EXPECT_EQ(testing::read_test_file(dir_ + "/notes.txt"), "one\ntwo\n");
}

// The route a request takes is shown before its answer, chat included.
TEST_F(AgentTest, RoutedChatShowsItsRoute) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  ASSERT_TRUE(agent->handle_line("tell me a joke"));
  const std::string o = out_.str();
  const size_t route = o.find("-> chat"), answer = o.find("plain");
  ASSERT_NE(route, std::string::npos) << o;
  ASSERT_NE(answer, std::string::npos) << o;
  EXPECT_LT(route, answer) << o;
}

// A conversation that outgrew the context: the older half of the history goes and the turn is
// answered, with one notice and no error line; the agent does not fail.
TEST_F(AgentTest, HistoryPastTheContextIsTrimmed) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  ASSERT_TRUE(agent->handle_line("/raw"));
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(agent->handle_line("question " + std::to_string(i) + std::string(60, 'x')));
  EXPECT_EQ(agent->conversation().messages().size(), 12u);
  out_.str("");
  llm_.set_context_chars(400);  // about four exchanges
  ASSERT_TRUE(agent->handle_line("one more" + std::string(60, 'y')));
  const std::string o = out_.str();
  EXPECT_NE(o.find("outgrew the model's context"), std::string::npos) << o;
  EXPECT_EQ(o.find("error:"), std::string::npos) << o;
  EXPECT_NE(o.find("plain"), std::string::npos) << o;
  EXPECT_LT(agent->conversation().messages().size(), 12u);
  EXPECT_EQ(agent->conversation().messages().back().content, "A **plain** chat answer.");
  EXPECT_EQ(agent->stats().failed, 0);
}

// No backend answers: one error line that names the backend and why, and the turn counts as
// unanswered (the REPL's exit status).
TEST_F(AgentTest, NoBackendIsOneClearError) {
  config_.backends[0].url = testing::closed_port_url();
  BackendPool pool(config_);
  auto agent = make_agent(&pool, false);
  ASSERT_TRUE(agent->handle_line("hello"));
  const std::string o = out_.str();
  EXPECT_EQ(o.find("routing failed"), std::string::npos) << o;
  size_t errors = 0;
  for (size_t at = o.find("error:"); at != std::string::npos; at = o.find("error:", at + 1)) ++errors;
  EXPECT_EQ(errors, 1u) << o;
  EXPECT_NE(o.find("scripted"), std::string::npos) << o;
  EXPECT_EQ(agent->unanswered(), 1);
}

TEST(WebSearch, EndToEndAgainstLocalPages) {
  ScriptedServer web;
  web.add_page("/html/", data("ddg_results.html"));
  web.add_page("/article/sniper", data("article_sniper.html"));
  web.add_page("/article/experts", data("article_experts.html"));
  ASSERT_TRUE(web.start());
  AgentConfig c;
  c.search_url = web.url() + "/html/";
  c.search_results = 2;
  c.page_chars = 80;
  auto sources = search_web("sniper", c, nullptr);
  ASSERT_TRUE(sources.ok()) << sources.error().message;
  ASSERT_EQ(sources->size(), 2u);
  EXPECT_TRUE((*sources)[0].fetched);
  EXPECT_LE((*sources)[0].text.size(), 80u);
  EXPECT_EQ((*sources)[0].text.rfind("Sniper \u2014 a CPU LLM engine", 0), 0u) << (*sources)[0].text;
  std::string prompt = sources_prompt("q?", *sources);
  EXPECT_NE(prompt.find("[2] Streaming experts from SSD"), std::string::npos);
  AgentConfig bad = c;
  bad.search_url = testing::closed_port_url() + "/html/";
  bad.search_timeout_s = 1;
  EXPECT_FALSE(search_web("x", bad, nullptr).ok());
}

}  // namespace
}  // namespace sniper::agent
