// SPDX-License-Identifier: MIT
// Media in the agent: /image and /audio attach a file to the next message (checked: size, kind,
// format), the message goes as OpenAI content parts (image_url data URL, input_audio) to the tier
// whose model lists the capability in /v1/models (or in the config), follow-up turns keep the
// image for that tier, and a clear message when no tier can read it (nothing sent, the next
// message works). Against the scripted server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "agent/media_attachment.h"
#include "agent/scripted_server.h"

namespace sniper::agent {
namespace {

using testing::ScriptedServer;

// A file that starts with the PNG signature (the agent only sniffs; the server decodes).
const std::string kPngBytes = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\rIHDR-not-decoded", 21);
const std::string kWavBytes = std::string("RIFF\x24\0\0\0WAVEfmt ", 16) + std::string(24, '\0');

class AgentMediaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sniper-agent-media-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    std::ofstream(dir_ + "/cat.png", std::ios::binary) << kPngBytes;
    std::ofstream(dir_ + "/note.wav", std::ios::binary) << kWavBytes;
    std::ofstream(dir_ + "/empty.png", std::ios::binary).flush();
    std::ofstream(dir_ + "/text.png") << "not an image at all";
    // The text tier routes (fast requests fall through to it) and answers text.
    text_.add_rule({{"Answer with one word"}, {}, "chat", 0, 6});
    text_.set_default_reply("A text answer.");
    ASSERT_TRUE(text_.start());
    vision_.set_default_reply("A cat on a sofa.");
    vision_.set_capabilities({"completion", "vision"});
    ASSERT_TRUE(vision_.start());
    config_.backends.clear();
    config_.backends.push_back(backend("text", text_.url(), Tier::kPrimary));
    config_.backends.push_back(backend("eyes", vision_.url(), Tier::kHeavy));
    config_.read_timeout_s = 2;
    config_.connect_timeout_s = 1;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "cleanup failed\n");
  }
  static BackendConfig backend(const std::string& name, const std::string& url, Tier role) {
    BackendConfig b;
    b.name = name;
    b.url = url;
    b.role = role;
    return b;
  }
  std::unique_ptr<Agent> make_agent(BackendPool* pool) {
    AgentIo io;
    io.out = &out_;
    io.cwd = dir_;
    io.grade_log = dir_ + "/grades.jsonl";
    return std::make_unique<Agent>(config_, pool, io);
  }
  // The chat requests (not routing requests) a server received.
  static std::vector<nlohmann::json> chats(const ScriptedServer& s) {
    std::vector<nlohmann::json> out;
    for (const nlohmann::json& r : s.requests()) {
      if (r["messages"].back()["content"].dump().find("Answer with one word") == std::string::npos) out.push_back(r);
    }
    return out;
  }

  std::string dir_;
  ScriptedServer text_, vision_;
  AgentConfig config_;
  std::ostringstream out_;
};

TEST(AttachmentTest, Base64MatchesRfc4648Vectors) {
  auto enc = [](const std::string& s) {
    return base64_encode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
  };
  EXPECT_EQ(enc(""), "");
  EXPECT_EQ(enc("f"), "Zg==");
  EXPECT_EQ(enc("fo"), "Zm8=");
  EXPECT_EQ(enc("foo"), "Zm9v");
  EXPECT_EQ(enc("foob"), "Zm9vYg==");
  EXPECT_EQ(enc("fooba"), "Zm9vYmE=");
  EXPECT_EQ(enc("foobar"), "Zm9vYmFy");
  EXPECT_EQ(enc(std::string("\xff\xfe\x00", 3)), "//4A");
}

TEST_F(AgentMediaTest, AttachmentErrorsNameTheProblem) {
  auto err = [&](const std::string& name, MediaKind kind, uint64_t max_bytes) {
    auto a = load_attachment(dir_ + "/" + name, kind, max_bytes);
    return a.ok() ? std::string("ok") : a.error().message;
  };
  EXPECT_NE(err("missing.png", MediaKind::kImage, 1 << 20).find("No such file"), std::string::npos);
  EXPECT_NE(err("empty.png", MediaKind::kImage, 1 << 20).find("empty"), std::string::npos);
  EXPECT_NE(err("cat.png", MediaKind::kImage, 10).find("over the limit of 10 bytes per image"), std::string::npos);
  EXPECT_NE(err("text.png", MediaKind::kImage, 1 << 20).find("not a known image format (png, jpeg, webp, gif"),
            std::string::npos)
      << err("text.png", MediaKind::kImage, 1 << 20);
  EXPECT_NE(err("note.wav", MediaKind::kImage, 1 << 20).find("it is wav audio, not an image: attach it with /audio"),
            std::string::npos);
  EXPECT_NE(err("cat.png", MediaKind::kAudio, 1 << 20).find("it is a png image, not audio: attach it with /image"),
            std::string::npos);
  EXPECT_NE(err("", MediaKind::kImage, 1 << 20).find("not a regular file"), std::string::npos);  // the directory
  auto ok = load_attachment(dir_ + "/cat.png", MediaKind::kImage, 1 << 20);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value().name, "cat.png");
  EXPECT_EQ(ok.value().format, "png");
  EXPECT_EQ(ok.value().bytes, kPngBytes.size());
}

TEST_F(AgentMediaTest, ImageGoesToTheVisionTierAndStaysForFollowUps) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/image cat.png");
  EXPECT_NE(out_.str().find("attached [image: cat.png, png, 29 bytes]: it goes with your next message"),
            std::string::npos)
      << out_.str();
  ASSERT_EQ(agent->pending_media().size(), 1u);
  agent->handle_line("/image");  // lists what is attached
  EXPECT_NE(out_.str().find("attached to the next message:\n  [image: cat.png"), std::string::npos) << out_.str();
  agent->handle_line("what is in this picture?");
  std::string o = out_.str();
  EXPECT_NE(o.find("-> chat (with 1 attachment(s))"), std::string::npos) << o;
  EXPECT_NE(o.find("A cat on a sofa."), std::string::npos) << o;
  EXPECT_NE(o.find("[eyes"), std::string::npos) << o;  // the status line names the vision backend
  EXPECT_TRUE(agent->pending_media().empty());
  EXPECT_EQ(text_.chat_requests(), 0);  // no routing request, no text-tier answer
  ASSERT_EQ(vision_.chat_requests(), 1);
  const nlohmann::json content = vision_.requests()[0]["messages"].back()["content"];
  ASSERT_TRUE(content.is_array()) << content.dump();
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["type"], "text");
  EXPECT_EQ(content[0]["text"], "what is in this picture?");
  EXPECT_EQ(content[1]["type"], "image_url");
  const std::string b64 =
      base64_encode(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kPngBytes.data()), kPngBytes.size()));
  EXPECT_EQ(content[1]["image_url"]["url"], "data:image/png;base64," + b64);
  // The history keeps the image: a follow-up is routed by the text tier, answered by the vision
  // tier with the same image (so the server reuses its cache).
  agent->handle_line("and what colour is it?");
  std::vector<nlohmann::json> answers = chats(vision_);
  ASSERT_EQ(answers.size(), 2u) << out_.str();
  const nlohmann::json& history = answers[1]["messages"];
  ASSERT_EQ(history.size(), 4u);  // system, user (+image), assistant, user
  EXPECT_EQ(history[1]["content"][1]["image_url"]["url"], "data:image/png;base64," + b64);
  EXPECT_EQ(history[3]["content"], "and what colour is it?");
  EXPECT_TRUE(chats(text_).empty());
  // /save writes a note, not the bytes.
  agent->handle_line("/save chat.md");
  std::ifstream saved(dir_ + "/chat.md");
  std::stringstream md;
  md << saved.rdbuf();
  EXPECT_NE(md.str().find("[image: cat.png, png, 29 bytes]\nwhat is in this picture?"), std::string::npos) << md.str();
}

TEST_F(AgentMediaTest, NoTierCanReadAudioIsOneClearMessageAndTheNextTurnWorks) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/audio note.wav");
  agent->handle_line("transcribe this");
  std::string o = out_.str();
  EXPECT_NE(o.find("error: no tier can read this audio: no backend's model lists \"audio\" in /v1/models "
                   "[text (primary): text only; eyes (heavy): completion, vision]"),
            std::string::npos)
      << o;
  EXPECT_NE(o.find("Nothing was sent; the attachments are dropped."), std::string::npos) << o;
  EXPECT_EQ(text_.chat_requests() + vision_.chat_requests(), 0);
  EXPECT_TRUE(agent->pending_media().empty());
  EXPECT_TRUE(agent->conversation().empty());
  agent->handle_line("hello");
  EXPECT_NE(out_.str().find("A text answer."), std::string::npos) << out_.str();
}

TEST_F(AgentMediaTest, ConfiguredCapabilitiesAndWhatReachesATextOnlyTier) {
  // A backend whose server does not list capabilities (a cloud API) is told by the config.
  config_.backends.pop_back();
  config_.backends[0].capabilities = std::vector<std::string>{"audio"};
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/audio note.wav");
  agent->handle_line("/image cat.png");
  EXPECT_EQ(agent->pending_media().size(), 2u);
  agent->handle_line("what do you hear?");  // the image needs vision: nobody has it
  EXPECT_NE(out_.str().find("no tier can read this image and audio"), std::string::npos) << out_.str();
  agent->handle_line("/audio note.wav");
  agent->handle_line("what do you hear?");
  ASSERT_EQ(chats(text_).size(), 1u) << out_.str();
  const nlohmann::json content = chats(text_)[0]["messages"].back()["content"];
  ASSERT_EQ(content.size(), 2u) << content.dump();
  EXPECT_EQ(content[1]["type"], "input_audio");
  EXPECT_EQ(content[1]["input_audio"]["format"], "wav");
  // A tool prompt over the history carries a note in place of the audio.
  nlohmann::json notes = agent->conversation().to_messages("next");
  EXPECT_EQ(notes[1]["content"][0]["text"],
            "[audio: note.wav, wav, 40 bytes] (not sent: this model cannot read audio)\nwhat do you hear?");
  EXPECT_EQ(notes[1]["content"].size(), 1u);
}

TEST_F(AgentMediaTest, ClearDropsAttachments) {
  BackendPool pool(config_);
  auto agent = make_agent(&pool);
  agent->handle_line("/image cat.png");
  agent->handle_line("/image text.png");
  EXPECT_NE(out_.str().find("error: cannot attach"), std::string::npos);
  EXPECT_EQ(agent->pending_media().size(), 1u);
  agent->handle_line("/clear");
  EXPECT_NE(out_.str().find("conversation cleared (and 1 attachment(s) dropped)"), std::string::npos) << out_.str();
  EXPECT_TRUE(agent->pending_media().empty());
}

}  // namespace
}  // namespace sniper::agent
