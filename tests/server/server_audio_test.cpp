// SPDX-License-Identifier: MIT
// Audio through the server (issue 39), on the gemma4a reference case of tests/media/reference
// (syn-gemma4e-small + the q8_0 gemma4a projector that synth writes again, checked by SHA-256;
// the 2 s tone WAV of scripts/mm/audio_signals.py):
//   * OpenAI's input_audio part: the greedy reply equals what the engine generates for the same
//     plain-format prompt with the audio in place of its marker (what `sniper run --audio` does),
//     and the prompt's token count is the engine's; another clip gives another reply from the
//     engine (so the audio decides it); a second turn over the same clip reuses the slot's cache;
//   * the capabilities name audio, Ollama's /api/show names the gemma4a projector;
//   * the APIs without an audio field say so by name: audio bytes in Ollama's images (/api/chat and
//     /api/generate), an Ollama "audio" field, an Anthropic audio block or image block holding a
//     WAV, and a WAV in an OpenAI image_url; an image in input_audio, an image sent to this
//     audio-only projector, a truncated WAV and a clip over the duration limit each get a 400
//     naming the problem, and the next audio request works.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "engine/media_prompt.h"
#include "media/test_reference_files.h"
#include "test_server.h"

namespace sniper::server {
namespace {

std::string base64(const std::vector<uint8_t>& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    const uint32_t v = (uint32_t{bytes[i]} << 16) | (rest == 2 ? uint32_t{bytes[i + 1]} << 8 : 0);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

const std::string kModel = "/models/syn-gemma4e-small.gguf";
const std::string kCase = std::string(SNIPER_SOURCE_DIR) + "/tests/media/reference/gemma4e-gemma4a-q8_0";
const std::string kPrompt = "User: <__media__>Transcribe.\nAssistant:";  // the plain format of one user turn

class ServerAudio : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::ifstream mf(kCase + "/case.json");
    const nlohmann::json meta = nlohmann::json::parse(mf);
    ModelLoadOptions lo;
    lo.n_ctx = 512;
    auto lm = Model::load(shared_dir() + kModel, lo);
    ASSERT_TRUE(lm.ok()) << lm.error().message;
    const std::string path = test::write_synth_projector(meta, "server-audio", (*lm)->config().dim);
    MmprojOptions mo;
    mo.limits.max_media = 2;
    mo.limits.max_bytes = 256 << 10;
    mo.limits.max_audio_seconds = 3;
    auto mmproj = Mmproj::load(path, mo);
    std::filesystem::remove(path);
    ASSERT_TRUE(mmproj.ok()) << mmproj.error().message;
    mmproj_ = std::move(mmproj).value().release();
    ServerOptions o;
    o.mmproj = mmproj_;
    server_ = new TestServer(shared_dir() + kModel, o, 512);
    ASSERT_TRUE(server_->ok()) << server_->error();
    wav_ = test::wav_of(test::samples_of("tone", 32000));
  }
  static void TearDownTestSuite() {
    delete server_;
    delete mmproj_;
  }

  static TJson post(const std::string& path, const TJson& body, int* status) {
    return post_json(*server_, path, body, status);
  }
  static TJson audio_part(const std::vector<uint8_t>& bytes, const std::string& format = "wav") {
    return TJson{{"type", "input_audio"}, {"input_audio", {{"data", base64(bytes)}, {"format", format}}}};
  }
  static TJson openai_body(TJson parts, int max_tokens = 8) {
    return TJson{{"max_tokens", max_tokens},
                 {"temperature", 0},
                 {"messages", TJson::array({TJson{{"role", "user"}, {"content", std::move(parts)}}})}};
  }
  static TJson audio_body() {
    return openai_body(TJson::array({audio_part(wav_), {{"type", "text"}, {"text", "Transcribe."}}}));
  }
  // A request that must fail with 400 and a message holding every needle; then an audio request works.
  static void expect_refused(const std::string& path, const TJson& body, const std::vector<std::string>& needles) {
    int status = 0;
    TJson r = post(path, body, &status);
    EXPECT_EQ(status, 400) << r.dump();
    const std::string message =
        r["error"].is_string() ? r["error"].get<std::string>() : r["error"]["message"].get<std::string>();
    for (const std::string& needle : needles) EXPECT_NE(message.find(needle), std::string::npos) << message;
    TJson ok = post("/v1/chat/completions", audio_body(), &status);
    EXPECT_EQ(status, 200) << ok.dump();
  }

  // What `sniper run --audio F -p kPrompt --temp 0 -n N` generates: the engine on the same model.
  static std::string engine_reply(const std::vector<uint8_t>& wav, int n_predict, size_t* n_cells) {
    ThreadPool pool(2);
    auto chunk = mmproj_->encode(wav, pool);
    EXPECT_TRUE(chunk.ok()) << chunk.error().message;
    if (!chunk.ok()) return "";
    std::vector<MediaChunk> media;
    media.push_back(std::move(chunk).value());
    auto tok = server_->model().tokenizer();
    EXPECT_TRUE(tok.ok());
    auto built = build_media_prompt(**tok, server_->model().config(), kPrompt, media, true);
    EXPECT_TRUE(built.ok()) << built.error().message;
    if (!built.ok()) return "";
    if (n_cells != nullptr) *n_cells = built->n_cells();
    SessionOptions so;
    so.n_ctx = 512;
    so.n_threads = 2;
    auto session = Session::create(server_->model(), so);
    EXPECT_TRUE(session.ok()) << session.error().message;
    GenerateOptions go;
    go.n_predict = n_predict;
    go.sampler.temperature = 0;
    std::string text;
    auto stats = generate_media(**session, **tok, *built, go, [&](std::string_view t) {
      text += t;
      return true;
    });
    EXPECT_TRUE(stats.ok()) << stats.error().message;
    return text;
  }

  static inline Mmproj* mmproj_ = nullptr;
  static inline TestServer* server_ = nullptr;
  static inline std::vector<uint8_t> wav_;
};

TEST_F(ServerAudio, OpenAiInputAudioEqualsTheEngineAndReusesTheCache) {
  int status = 0;
  TJson first = post("/v1/chat/completions", audio_body(), &status);
  ASSERT_EQ(status, 200) << first.dump();
  size_t n_cells = 0;
  const std::string want = engine_reply(wav_, 8, &n_cells);
  EXPECT_EQ(first["choices"][0]["message"]["content"].get<std::string>(), want);
  const int64_t n_prompt = first["usage"]["prompt_tokens"].get<int64_t>();
  EXPECT_EQ(n_prompt, static_cast<int64_t>(n_cells));
  EXPECT_GT(n_prompt, 50);  // the clip's 50 tokens (2 s) and the text around them
  // The audio decides the reply: 3 s of the noise signal makes the engine answer otherwise.
  EXPECT_NE(engine_reply(test::wav_of(test::samples_of("noise", 48000)), 8, nullptr), want);
  TJson second = post("/v1/chat/completions", audio_body(), &status);
  ASSERT_EQ(status, 200) << second.dump();
  EXPECT_EQ(second["choices"][0]["message"]["content"], first["choices"][0]["message"]["content"]);
  EXPECT_EQ(second["timings"]["prompt_n"].get<int64_t>(), 1);  // the clip and the text from the cache
}

TEST_F(ServerAudio, CapabilitiesNameAudio) {
  auto res = server_->client()->Get("/v1/models");
  ASSERT_TRUE(res);
  EXPECT_EQ(TJson::parse(res->body)["data"][0]["capabilities"], TJson::array({"completion", "audio"})) << res->body;
  int status = 0;
  TJson show = post("/api/show", TJson{{"model", "syn-gemma4e-small"}}, &status);
  ASSERT_EQ(status, 200) << show.dump();
  EXPECT_EQ(show["capabilities"], TJson::array({"completion", "audio"}));
  EXPECT_EQ(show["projector_info"]["clip.audio.projector_type"], "gemma4a") << show.dump();
  EXPECT_FALSE(show["projector_info"].contains("clip.vision.projector_type"));
}

TEST_F(ServerAudio, ApisWithoutAnAudioFieldSaySo) {
  const std::string wav = base64(wav_);
  expect_refused("/api/chat",
                 TJson{{"model", "syn-gemma4e-small"},
                       {"stream", false},
                       {"messages", TJson::array({TJson{{"role", "user"}, {"content", "x"}, {"images", {wav}}}})}},
                 {"messages[0].images[0] holds wav audio", "the Ollama API has no audio field", "input_audio"});
  expect_refused("/api/chat",
                 TJson{{"model", "syn-gemma4e-small"},
                       {"stream", false},
                       {"messages", TJson::array({TJson{{"role", "user"}, {"content", "x"}, {"audio", {wav}}}})}},
                 {"messages[0].audio", "the Ollama API has no audio field"});
  expect_refused("/api/generate",
                 TJson{{"model", "syn-gemma4e-small"}, {"stream", false}, {"prompt", "x"}, {"images", {wav}}},
                 {"images[0] holds wav audio", "the Ollama API has no audio field"});
  TJson anthropic = TJson::parse(R"({"model": "syn-gemma4e-small", "max_tokens": 2,
                                     "messages": [{"role": "user", "content": []}]})");
  anthropic["messages"][0]["content"] = TJson::array(
      {TJson{{"type", "audio"}, {"source", {{"type", "base64"}, {"media_type", "audio/wav"}, {"data", wav}}}}});
  expect_refused("/v1/messages", anthropic,
                 {"messages[0].content[0].type is 'audio'", "the Anthropic Messages API has no audio content block"});
  anthropic["messages"][0]["content"] = TJson::array(
      {TJson{{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", wav}}}}});
  expect_refused(
      "/v1/messages", anthropic,
      {"messages[0].content[0].source.data holds wav audio", "the Anthropic Messages API has no audio content block"});
  expect_refused("/v1/chat/completions",
                 openai_body(TJson::array(
                     {TJson{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + wav}}}}})),
                 {"messages[0].content[0].image_url.url holds wav audio", "send audio as an input_audio part"});
}

TEST_F(ServerAudio, BadAudioGets400AndTheServerGoesOn) {
  const std::string chat = "/v1/chat/completions";
  const std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  expect_refused(chat, openai_body(TJson::array({audio_part(png)})),
                 {"messages[0].content[0].input_audio.data holds a png image", "send images as image_url parts"});
  expect_refused(chat,
                 openai_body(TJson::array(
                     {TJson{{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64," + base64(png)}}}}})),
                 {"reads no images"});
  std::vector<uint8_t> cut = wav_;
  cut.resize(cut.size() / 2);
  expect_refused(chat, openai_body(TJson::array({audio_part(cut)})), {"input_audio.data", "wav audio is truncated"});
  expect_refused(chat, openai_body(TJson::array({audio_part(test::wav_of(test::samples_of("tone", 64000)))})),
                 {"wav audio lasts 4.0 seconds, over the limit of 3 seconds"});
  expect_refused(chat, openai_body(TJson::array({audio_part({'n', 'o', 'p', 'e'})})), {"input_audio.data"});
  expect_refused(chat, openai_body(TJson::array({audio_part(wav_), audio_part(wav_), audio_part(wav_)})),
                 {"more than 2 media items"});
}

}  // namespace
}  // namespace sniper::server
