// SPDX-License-Identifier: MIT
// Wiring against the real `sniper serve`: the agent's LocalServer starts it with --port 0 and reads
// the ready line, then one /raw chat turn goes through the backend client and the agent core.
// stories260K has no chat template, so chat runs on a synthetic qwen3 model (real Qwen3 tokenizer
// and chat template, random weights) written by `sniper synth`; stories260K checks that a chat
// request to a template-less model is either answered or rejected cleanly (HTTP 4xx).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "agent/local_server.h"
#include "agent/scripted_server.h"
#include "golden/shared_dir.h"
#include "media/test_reference_files.h"

namespace sniper::agent {
namespace {

TEST(ReadyLine, Parses) {
  EXPECT_EQ(parse_ready_line("sniper serve: listening on http://127.0.0.1:40123/"), "http://127.0.0.1:40123");
  EXPECT_EQ(parse_ready_line("sniper serve: listening on http://127.0.0.1:40123/\r\n"), "http://127.0.0.1:40123");
  EXPECT_FALSE(parse_ready_line("loading model...").has_value());
}

TEST(LocalServer, ChildThatExitsEarlyIsAnError) {
  auto r = LocalServer::start("/bin/false", {}, 10, "");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exited before it was ready"), std::string::npos) << r.error().message;
}

class ServeWiring : public ::testing::Test {
 protected:
  static std::string synth_qwen3(const std::string& suffix = "", int seed = 1) {
    std::string out = "/tmp/sniper-agent-wiring-" + std::to_string(::getpid()) + suffix + ".gguf";
    std::string tok = shared_dir() + "/tokenizer";
    std::string cmd =
        std::string(SNIPER_CLI_PATH) +
        " synth --arch qwen3 --dim 64 --layers 2 --heads 2 --kv-heads 1 --head-dim 32 --ff 128 --type q8_0"
        " --vocab-from " +
        tok + "/ggml-vocab-qwen2.gguf --chat-template " + tok + "/qwen3/tokenizer_config.json --seed " +
        std::to_string(seed) + " -o " + out + " > /dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? out : "";
  }
};

TEST_F(ServeWiring, RawChatTurnThroughTheAgent) {
  std::string model = synth_qwen3();
  ASSERT_FALSE(model.empty()) << "sniper synth failed";
  std::string log = model + ".log";
  auto server = LocalServer::start(SNIPER_CLI_PATH, {"serve", "-m", model, "--port", "0", "--ctx", "256"}, 120, log);
  struct Cleanup {
    std::string model, log;
    ~Cleanup() {
      std::remove(model.c_str());
      std::remove(log.c_str());
    }
  } cleanup{model, log};
  ASSERT_TRUE(server.ok()) << server.error().message;
  std::string url = (*server)->url();
  EXPECT_EQ(url.rfind("http://127.0.0.1:", 0), 0u) << url;

  BackendConfig b;
  b.name = "local";
  b.url = url;
  BackendClient client(b, 2, 60);
  ChatRequest req;
  req.messages = nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}});
  req.max_tokens = 8;
  req.temperature = 0.0;
  req.thinking = false;
  std::string streamed;
  ChatResult r = client.chat(
      req, [&](std::string_view t, bool) { streamed += t; }, nullptr);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GT(r.completion_tokens, 0);
  EXPECT_LE(r.completion_tokens, 8);
  auto models = client.list_models();
  ASSERT_TRUE(models.ok()) << models.error().message;
  ASSERT_EQ(models->size(), 1u);

  AgentConfig config;
  config.backends = {b};
  config.max_tokens = 8;
  config.read_timeout_s = 60;
  BackendPool pool(config);
  std::ostringstream out;
  AgentIo io;
  io.out = &out;
  Agent agent(config, &pool, io);
  agent.handle_line("/raw");
  agent.handle_line("Say something.");
  ASSERT_EQ(agent.conversation().messages().size(), 2u) << out.str();
  EXPECT_EQ(agent.stats().turns, 1) << out.str();
  EXPECT_NE(out.str().find("[local · "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("tok/s"), std::string::npos);
}

// Two tiers on one URL: `sniper serve --model fast=... --model primary=...` and two backends
// that differ only in "model". Each request reaches its own model (the server's log shows both
// loaded, one at a time with --max-loaded 1).
TEST_F(ServeWiring, TiersNameModelsOnOneUrl) {
  std::string fast = synth_qwen3("-fast", 1), primary = synth_qwen3("-primary", 2);
  ASSERT_FALSE(fast.empty() || primary.empty()) << "sniper synth failed";
  std::string log = fast + ".log";
  struct Cleanup {
    std::vector<std::string> files;
    ~Cleanup() {
      for (const std::string& f : files) std::remove(f.c_str());
    }
  } cleanup{{fast, primary, log}};
  auto server = LocalServer::start(SNIPER_CLI_PATH,
                                   {"serve", "--model", "fast=" + fast, "--model", "primary=" + primary, "--max-loaded",
                                    "1", "--keep-alive", "-1", "--port", "0", "--ctx", "256"},
                                   120, log);
  ASSERT_TRUE(server.ok()) << server.error().message;
  AgentConfig config;
  BackendConfig f;
  f.name = "fast";
  f.url = (*server)->url();
  f.model = "fast";
  f.role = Tier::kFast;
  BackendConfig p = f;
  p.name = "primary";
  p.model = "primary";
  p.role = Tier::kPrimary;
  for (const BackendConfig& b : {f, p, f}) {
    ChatRequest req;
    req.messages = nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}});
    req.max_tokens = 4;
    req.temperature = 0.0;
    req.thinking = false;
    ChatResult r = BackendClient(b, 2, 60).chat(req, {}, nullptr);
    ASSERT_TRUE(r.ok()) << b.name << ": " << r.error;
  }
  auto models = BackendClient(f, 2, 60).list_models();
  ASSERT_TRUE(models.ok()) << models.error().message;
  EXPECT_EQ(models->size(), 2u);
  // An unknown model is the client's error, not a failover-worthy server failure.
  BackendConfig unknown = f;
  unknown.model = "nope";
  ChatRequest req;
  req.messages = nlohmann::json::array({{{"role", "user"}, {"content", "Hello!"}}});
  req.max_tokens = 4;
  ChatResult bad = BackendClient(unknown, 2, 60).chat(req, {}, nullptr);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.failure, FailureKind::kClient) << failure_name(bad.failure) << ": " << bad.error;
  server->reset();  // stops the server and flushes its log
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_NE(text.str().find("loaded model 'fast'"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("loaded model 'primary'"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("unloaded model 'fast'"), std::string::npos) << text.str();
}

// Media through the real server: `serve --mmproj` lists "vision" in /v1/models, the agent sends
// /image's PNG to it as an image_url part and gets an answer; audio (this projector has no audio
// encoder) gets the agent's clear message and nothing is sent.
TEST_F(ServeWiring, ImageTurnThroughTheAgent) {
  const std::string model = shared_dir() + "/models/syn-gemma4moe-small.gguf";
  const std::string mmproj = shared_dir() + "/models/mm/syn-gemma4v-small.mmproj.gguf";
  const std::string png = shared_dir() + "/reference/mm/syn-gemma4v-small/img.png";
  ASSERT_EQ(::access(mmproj.c_str(), R_OK), 0) << mmproj;
  auto server = LocalServer::start(SNIPER_CLI_PATH,
                                   {"serve", "-m", model, "--mmproj", mmproj, "--port", "0", "--ctx", "512"}, 120, "");
  ASSERT_TRUE(server.ok()) << server.error().message;
  AgentConfig config;
  BackendConfig b;
  b.name = "local";
  b.url = (*server)->url();
  config.backends = {b};
  config.max_tokens = 4;
  config.read_timeout_s = 60;
  BackendPool pool(config);
  const std::vector<std::string>& caps = pool.capabilities(0);
  EXPECT_NE(std::find(caps.begin(), caps.end(), "vision"), caps.end());
  EXPECT_EQ(std::find(caps.begin(), caps.end(), "audio"), caps.end());
  std::ostringstream out;
  AgentIo io;
  io.out = &out;
  const std::string wav = "/tmp/sniper-agent-wiring-" + std::to_string(::getpid()) + ".wav";
  std::ofstream(wav, std::ios::binary) << std::string("RIFF\x24\0\0\0WAVEfmt ", 16) << std::string(24, '\0');
  Agent agent(config, &pool, io);
  agent.handle_line("/raw");
  agent.handle_line("/image " + png);
  agent.handle_line("What is in the picture?");
  ASSERT_EQ(agent.conversation().messages().size(), 2u) << out.str();
  EXPECT_EQ(agent.conversation().messages()[0].media.size(), 1u);
  EXPECT_NE(out.str().find("[local · "), std::string::npos) << out.str();
  agent.handle_line("/audio " + wav);
  agent.handle_line("And this?");
  std::remove(wav.c_str());
  EXPECT_NE(out.str().find("error: no tier can read this audio"), std::string::npos) << out.str();
  EXPECT_EQ(agent.conversation().messages().size(), 2u);
  agent.handle_line("And the colours?");  // the follow-up keeps the image for the vision model
  EXPECT_EQ(agent.conversation().messages().size(), 4u) << out.str();
}

// An audio turn through the agent against `sniper serve --mmproj` with the gemma4a reference
// projector (tests/media/reference/gemma4e-gemma4a-q8_0's synth flags) and its 2 s tone: the agent
// routes the clip to the backend that lists "audio", and the reply is what `sniper run --audio`
// generates for the same plain-format prompt (the agent puts the text before the clip).
TEST_F(ServeWiring, AudioTurnThroughTheAgent) {
  const std::string model = shared_dir() + "/models/syn-gemma4e-small.gguf";
  const std::string base = "/tmp/sniper-agent-audio-" + std::to_string(::getpid());
  const std::string mmproj = base + ".mmproj.gguf";
  const std::string wav = base + ".wav";
  struct Cleanup {
    std::string a, b;
    ~Cleanup() {
      std::remove(a.c_str());
      std::remove(b.c_str());
    }
  } cleanup{mmproj, wav};
  const std::string synth = std::string(SNIPER_CLI_PATH) +
                            " synth --mmproj gemma4a --type q8_0 --seed 22 --layers 3 --for " + model + " -o " +
                            mmproj + " > /dev/null 2>&1";
  ASSERT_EQ(std::system(synth.c_str()), 0) << synth;
  const std::vector<uint8_t> bytes = test::wav_of(test::samples_of("tone", 32000));
  std::ofstream(wav, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  auto server = LocalServer::start(
      SNIPER_CLI_PATH, {"serve", "-m", model, "--mmproj", mmproj, "--port", "0", "--ctx", "512", "--temp", "0"}, 120,
      "");
  ASSERT_TRUE(server.ok()) << server.error().message;
  AgentConfig config;
  BackendConfig b;
  b.name = "local";
  b.url = (*server)->url();
  config.backends = {b};
  config.max_tokens = 6;
  config.read_timeout_s = 60;
  config.system_prompt = "";
  BackendPool pool(config);
  const std::vector<std::string>& caps = pool.capabilities(0);
  EXPECT_NE(std::find(caps.begin(), caps.end(), "audio"), caps.end());
  EXPECT_EQ(std::find(caps.begin(), caps.end(), "vision"), caps.end());
  std::ostringstream out;
  AgentIo io;
  io.out = &out;
  Agent agent(config, &pool, io);
  agent.handle_line("/raw");
  agent.handle_line("/audio " + wav);
  agent.handle_line("Transcribe.");
  ASSERT_EQ(agent.conversation().messages().size(), 2u) << out.str();
  EXPECT_EQ(agent.conversation().messages()[0].media.size(), 1u);
  const std::string reply = agent.conversation().messages()[1].content;
  const std::string run = std::string(SNIPER_CLI_PATH) + " run -m " + model + " --mmproj " + mmproj + " --audio " +
                          wav + " -p 'User: Transcribe.<__media__>\nAssistant:' -n 6 --temp 0 --no-echo 2>/dev/null";
  std::string want;
  if (FILE* p = ::popen(run.c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) want.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << run;
  }
  auto trim = [](std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
    return s;
  };
  ASSERT_FALSE(trim(want).empty()) << run;
  EXPECT_EQ(trim(reply), trim(want)) << out.str();
}

TEST_F(ServeWiring, TemplateLessModelAnswersOrRejectsCleanly) {
  std::string model = shared_dir() + "/models/stories260K.gguf";
  ASSERT_EQ(::access(model.c_str(), R_OK), 0) << model;
  auto server = LocalServer::start(SNIPER_CLI_PATH, {"serve", "-m", model, "--port", "0"}, 120, "");
  ASSERT_TRUE(server.ok()) << server.error().message;
  BackendConfig b;
  b.name = "stories";
  b.url = (*server)->url();
  ChatRequest req;
  req.messages = nlohmann::json::array({{{"role", "user"}, {"content", "Once upon a time"}}});
  req.max_tokens = 8;
  ChatResult r = BackendClient(b, 2, 60).chat(req, {}, nullptr);
  EXPECT_TRUE(r.ok() || r.failure == FailureKind::kClient) << failure_name(r.failure) << ": " << r.error;
}

}  // namespace
}  // namespace sniper::agent
