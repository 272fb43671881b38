// SPDX-License-Identifier: MIT
// Standalone scripted OpenAI-compatible server for the tmux REPL test. Prints
// "scripted_openai_server: listening on http://127.0.0.1:PORT/" when ready and serves until
// SIGINT/SIGTERM. Besides chat it serves the saved search-result and article pages from
// --data-dir at /html/, /article/sniper and /article/experts, so one port is both the LLM and the
// "web". Canned behaviour (rules on the last user message):
//   routing: "news" -> search, "marker" or "files" -> shell, anything else -> chat
//   search query rewrite -> "sniper engine"; answer from sources -> cites [1] and [2]
//   shell command for "marker" -> `touch marker.txt` (needs confirmation); for "files" -> `ls`
//   "long story" -> a long reply streamed slowly (chunks every --slow-ms ms, default 100)
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "agent/scripted_server.h"

using sniper::agent::testing::read_test_file;
using sniper::agent::testing::Rule;
using sniper::agent::testing::ScriptedServer;

namespace {
std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }
}  // namespace

int main(int argc, char** argv) {
  std::string data_dir;
  int slow_ms = 100;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--data-dir") && i + 1 < argc) data_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--slow-ms") && i + 1 < argc) slow_ms = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: scripted_openai_server --data-dir DIR [--slow-ms N]\n");
      return 2;
    }
  }
  ScriptedServer server;
  server.add_rule({{"Answer with one word", "news"}, {}, "Search.", 0, 6});
  server.add_rule({{"Answer with one word", "marker"}, {}, "**shell**", 0, 6});
  server.add_rule({{"Answer with one word", "files"}, {}, "shell", 0, 6});
  server.add_rule({{"Answer with one word"}, {}, "chat", 0, 6});
  server.add_rule({{}, {"search query"}, "sniper engine", 0, 6});
  server.add_rule({{"marker"}, {"shell command"}, "touch marker.txt", 0, 6});
  server.add_rule({{"files"}, {"shell command"}, "ls", 0, 6});
  server.add_rule(
      {{"numbered sources"}, {}, "Sniper is a **CPU** LLM engine [1] that streams experts from SSD [2].", 10, 8});
  std::string story;
  for (int i = 1; i <= 300; ++i) story += "word" + std::to_string(i) + " ";
  server.add_rule({{"long story"}, {}, "Once upon a time " + story + "THE END", slow_ms, 6});
  server.set_default_reply("Hello from the scripted server.");
  if (!data_dir.empty()) {
    server.add_page("/html/", read_test_file(data_dir + "/ddg_results.html"));
    server.add_page("/article/sniper", read_test_file(data_dir + "/article_sniper.html"));
    server.add_page("/article/experts", read_test_file(data_dir + "/article_experts.html"));
  }
  if (!server.start()) {
    std::fprintf(stderr, "scripted_openai_server: cannot bind\n");
    return 1;
  }
  ::signal(SIGINT, on_signal);
  ::signal(SIGTERM, on_signal);
  std::printf("scripted_openai_server: listening on %s/\n", server.url().c_str());
  std::fflush(stdout);
  while (!g_stop.load()) ::usleep(50000);
  server.stop();
  return 0;
}
