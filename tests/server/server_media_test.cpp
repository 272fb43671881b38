// SPDX-License-Identifier: MIT
// Media in every server API (issue 39): an image through OpenAI's image_url, Ollama's images
// (/api/chat, /api/generate) and Anthropic's base64 image blocks, on the shared gemma4v fixture
// (syn-gemma4moe-small + syn-gemma4v-small.mmproj). The raw /api/generate text equals what the
// engine generates for the same prompt the way `sniper run --image` builds it; a second turn over
// the same image reuses the slot's cache (timings.prompt_n); capabilities name vision; every bad
// media item (http URL, bad base64, not an image, too many, too large, too many pixels, audio,
// no projector) gets a 400 naming the problem, and the next request works.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "engine/generate.h"
#include "engine/media_prompt.h"
#include "media/test_images.h"
#include "server/media_input.h"
#include "test_server.h"

namespace sniper::server {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = uint8_t(bytes[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

const std::string kModel = "/models/syn-gemma4moe-small.gguf";
const std::string kMmproj = "/models/mm/syn-gemma4v-small.mmproj.gguf";
const std::string kImage = "/reference/mm/syn-gemma4v-small/img.png";

class ServerMedia : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    MmprojOptions mo;
    mo.limits.max_media = 3;
    mo.limits.max_bytes = 64 << 10;
    mo.limits.max_pixels = 200 * 200;
    auto mmproj = Mmproj::load(shared_dir() + kMmproj, mo);
    ASSERT_TRUE(mmproj.ok()) << mmproj.error().message;
    mmproj_ = std::move(mmproj).value().release();
    ServerOptions o;
    o.mmproj = mmproj_;
    server_ = new TestServer(shared_dir() + kModel, o, 512);
    ASSERT_TRUE(server_->ok()) << server_->error();
    png_ = base64(read_file(shared_dir() + kImage));
    ASSERT_FALSE(png_.empty());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete mmproj_;
  }

  static TJson post(const std::string& path, const TJson& body, int* status) {
    return post_json(*server_, path, body, status);
  }

  static TJson image_part(const std::string& url) {
    return TJson{{"type", "image_url"}, {"image_url", {{"url", url}}}};
  }
  static TJson openai_body(TJson parts) {
    return TJson{{"max_tokens", 6},
                 {"temperature", 0},
                 {"messages", TJson::array({TJson{{"role", "user"}, {"content", std::move(parts)}}})}};
  }
  static TJson image_body() {
    return openai_body(
        TJson::array({image_part("data:image/png;base64," + png_), {{"type", "text"}, {"text", "What?"}}}));
  }
  // A request that must fail with 400 and a message holding `needle`; then an image request works.
  static void expect_refused(const std::string& path, const TJson& body, const std::string& needle) {
    int status = 0;
    TJson r = post(path, body, &status);
    EXPECT_EQ(status, 400) << r.dump();
    const std::string message =
        r["error"].is_string() ? r["error"].get<std::string>() : r["error"]["message"].get<std::string>();
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    TJson ok = post("/v1/chat/completions", image_body(), &status);
    EXPECT_EQ(status, 200) << ok.dump();
  }

  static inline Mmproj* mmproj_ = nullptr;
  static inline TestServer* server_ = nullptr;
  static inline std::string png_;
};

TEST_F(ServerMedia, OpenAiImageThenTheSameImageReusesTheCache) {
  int status = 0;
  TJson first = post("/v1/chat/completions", image_body(), &status);
  ASSERT_EQ(status, 200) << first.dump();
  TJson second = post("/v1/chat/completions", image_body(), &status);
  ASSERT_EQ(status, 200) << second.dump();
  EXPECT_EQ(first["choices"][0]["message"]["content"], second["choices"][0]["message"]["content"]);
  const int64_t n_prompt = first["usage"]["prompt_tokens"].get<int64_t>();
  EXPECT_GT(n_prompt, 48);  // the image's 48 tokens and the text
  EXPECT_EQ(first["timings"]["prompt_n"].get<int64_t>(), n_prompt);
  EXPECT_EQ(second["timings"]["prompt_n"].get<int64_t>(), 1);  // everything else, image included, from the cache
  EXPECT_EQ(second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), n_prompt - 1);
}

TEST_F(ServerMedia, AnotherImageIsNotTakenFromTheCache) {
  int status = 0;
  TJson first = post("/v1/chat/completions", image_body(), &status);
  ASSERT_EQ(status, 200) << first.dump();
  // The same text with another image (a JPEG): the image and what follows it are evaluated again.
  const std::vector<uint8_t> jpeg = test::write_jpeg(test::pattern(120, 80, 3, 8, 7), 90, false);
  const std::string other = base64(std::string(jpeg.begin(), jpeg.end()));
  TJson second = post(
      "/v1/chat/completions",
      openai_body(TJson::array({image_part("data:image/jpeg;base64," + other), {{"type", "text"}, {"text", "What?"}}})),
      &status);
  ASSERT_EQ(status, 200) << second.dump();
  // Only the text before the image is reused (media cells compare by hash, not by their cell value).
  const int64_t cached = second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  EXPECT_GT(cached, 0);
  EXPECT_LE(cached + 48, first["usage"]["prompt_tokens"].get<int64_t>() - 1);
  EXPECT_GE(second["timings"]["prompt_n"].get<int64_t>(), 48);
}

TEST_F(ServerMedia, RawGenerateEqualsTheEngineOnTheSamePrompt) {
  const std::string prompt = read_file(shared_dir() + "/reference/mm/syn-gemma4v-small/prompt.txt");
  int status = 0;
  TJson r = post("/api/generate",
                 TJson{{"model", "syn-gemma4moe-small"},
                       {"prompt", prompt},
                       {"raw", true},
                       {"stream", false},
                       {"images", TJson::array({png_})},
                       {"options", {{"temperature", 0}, {"num_predict", 8}, {"repeat_penalty", 1}}}},
                 &status);
  ASSERT_EQ(status, 200) << r.dump();
  // What `sniper run --image IMG -p PROMPT --temp 0 -n 8` does: build_media_prompt with BOS, generate_media.
  const std::string bytes = read_file(shared_dir() + kImage);
  ThreadPool pool(2);
  auto chunk = mmproj_->encode(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), pool);
  ASSERT_TRUE(chunk.ok()) << chunk.error().message;
  std::vector<MediaChunk> media;
  media.push_back(std::move(chunk).value());
  auto tok = server_->model().tokenizer();
  ASSERT_TRUE(tok.ok());
  auto built = build_media_prompt(**tok, server_->model().config(), prompt, media, true);
  ASSERT_TRUE(built.ok()) << built.error().message;
  SessionOptions so;
  so.n_ctx = 512;
  so.n_threads = 2;
  auto session = Session::create(server_->model(), so);
  ASSERT_TRUE(session.ok()) << session.error().message;
  GenerateOptions go;
  go.n_predict = 8;
  go.sampler.temperature = 0;
  std::string text;
  auto stats = generate_media(**session, **tok, *built, go, [&](std::string_view t) {
    text += t;
    return true;
  });
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(r["response"].get<std::string>(), text);
  EXPECT_EQ(built->n_cells(), 13 + 48 + 15);  // libmtmd's chunks (reference/mm/syn-gemma4v-small/chunks.json)
}

TEST_F(ServerMedia, OllamaChatAndAnthropicTakeImages) {
  int status = 0;
  TJson chat =
      post("/api/chat",
           TJson{{"model", "syn-gemma4moe-small"},
                 {"stream", false},
                 {"options", {{"temperature", 0}, {"num_predict", 4}}},
                 {"messages", TJson::array({TJson{{"role", "user"}, {"content", "What?"}, {"images", {png_}}}})}},
           &status);
  EXPECT_EQ(status, 200) << chat.dump();
  TJson image_block = TJson::parse(R"({"type": "image", "source": {"type": "base64", "media_type": "image/png"}})");
  image_block["source"]["data"] = png_;
  TJson anthropic = TJson::parse(R"({"model": "syn-gemma4moe-small", "max_tokens": 4, "temperature": 0,
                                     "messages": [{"role": "user", "content": []}]})");
  anthropic["messages"][0]["content"].push_back(image_block);
  anthropic["messages"][0]["content"].push_back(TJson{{"type", "text"}, {"text", "What?"}});
  TJson msg = post("/v1/messages", anthropic, &status);
  EXPECT_EQ(status, 200) << msg.dump();
  EXPECT_EQ(msg["type"], "message");
  TJson url_block = TJson::parse(R"({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}})");
  anthropic["messages"][0]["content"] = TJson::array({url_block});
  expect_refused("/v1/messages", anthropic, "inline only");
}

TEST_F(ServerMedia, CapabilitiesNameVision) {
  auto res = server_->client()->Get("/v1/models");
  ASSERT_TRUE(res);
  TJson models = TJson::parse(res->body);
  EXPECT_EQ(models["data"][0]["capabilities"], TJson::array({"completion", "vision"})) << models.dump();
  int status = 0;
  TJson show = post("/api/show", TJson{{"model", "syn-gemma4moe-small"}}, &status);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(show["capabilities"], TJson::array({"completion", "vision"}));
  EXPECT_EQ(show["projector_info"]["clip.vision.projector_type"], "gemma4v");
}

TEST_F(ServerMedia, BadMediaGets400AndTheServerGoesOn) {
  const std::string chat = "/v1/chat/completions";
  expect_refused(chat, openai_body(TJson::array({image_part("https://example.com/cat.png")})), "does not fetch");
  expect_refused(chat, openai_body(TJson::array({image_part("data:image/png;base64,!!!!")})), "invalid character");
  expect_refused(chat, openai_body(TJson::array({image_part("data:image/png,rawbytes")})), "base64 data URL");
  expect_refused(chat, openai_body(TJson::array({image_part("data:text/plain;base64,aGVsbG8=")})),
                 "must hold an image");
  // Bytes that are no image format the decoders know.
  expect_refused(chat, openai_body(TJson::array({image_part("data:image/png;base64," + base64("hello, world"))})),
                 "messages[0].content[0].image_url.url");
  // A truncated PNG.
  const std::string png = read_file(shared_dir() + kImage);
  expect_refused(
      chat, openai_body(TJson::array({image_part("data:image/png;base64," + base64(png.substr(0, png.size() / 2)))})),
      "png");
  // 300x300 pixels where 200x200 are allowed (checked on the header).
  const std::vector<uint8_t> big = test::write_png(test::pattern(300, 300, 3, 8), test::PngColor::kRgb, false);
  expect_refused(
      chat,
      openai_body(TJson::array({image_part("data:image/png;base64," + base64(std::string(big.begin(), big.end())))})),
      "40000");
  // Four images where three are allowed.
  TJson four = TJson::array();
  for (int i = 0; i < 4; ++i) four.push_back(image_part("data:image/png;base64," + png_));
  expect_refused(chat, openai_body(four), "more than 3 media items");
  // Over the byte limit (64 KiB here), checked from the base64 length before decoding.
  expect_refused(chat, openai_body(TJson::array({image_part("data:image/png;base64," + std::string(100000, 'A'))})),
                 "over the limit of 64 KiB");
  // Audio: this projector (gemma4v) has no audio encoder.
  expect_refused(
      chat,
      openai_body(TJson::array(
          {TJson{{"type", "input_audio"}, {"input_audio", {{"data", base64("RIFF....WAVE")}, {"format", "wav"}}}}})),
      "no audio encoder");
  expect_refused(chat,
                 openai_body(TJson::array(
                     {TJson{{"type", "input_audio"}, {"input_audio", {{"data", "AAAA"}, {"format", "aiff"}}}}})),
                 "must be one of wav");
  expect_refused("/api/chat",
                 TJson{{"model", "syn-gemma4moe-small"},
                       {"stream", false},
                       {"messages", TJson::array({TJson{{"role", "user"}, {"content", "x"}, {"images", {42}}}})}},
                 "messages[0].images[0] must be a base64 string");
  // Ollama's images and Anthropic's image blocks are named as the client sent them, not as the
  // OpenAI part they become.
  const std::string junk = base64("hello, world");
  expect_refused(
      "/api/chat",
      TJson{{"model", "syn-gemma4moe-small"},
            {"stream", false},
            {"messages", TJson::array({TJson{{"role", "user"}, {"content", "x"}, {"images", {png_, junk}}}})}},
      "messages[0].images[1]:");
  expect_refused("/api/generate",
                 TJson{{"model", "syn-gemma4moe-small"}, {"stream", false}, {"prompt", "x"}, {"images", {"!!!!"}}},
                 "images[0]: ");
  expect_refused(
      "/v1/messages",
      TJson{{"model", "syn-gemma4moe-small"},
            {"max_tokens", 2},
            {"messages",
             TJson::array({TJson{
                 {"role", "user"},
                 {"content",
                  TJson::array(
                      {TJson{{"type", "text"}, {"text", "x"}},
                       TJson{{"type", "image"},
                             {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", junk}}}}})}}})}},
      "messages[0].content[1].source.data:");
}

TEST(ServerMediaNoProjector, ImagesGet400AndNoVisionCapability) {
  TestServer server(shared_dir() + kModel, ServerOptions(), 256);
  ASSERT_TRUE(server.ok()) << server.error();
  TJson body = TJson::parse(R"({"max_tokens": 2, "messages": [{"role": "user", "content": [
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]})");
  auto res = server.client()->Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("no vision projector"), std::string::npos) << res->body;
  auto models = server.client()->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(TJson::parse(models->body)["data"][0]["capabilities"], TJson::array({"completion"}));
}

TEST(MediaInput, Base64IsStrictAndBounded) {
  auto ok = decode_base64("aGVsbG8=", 100);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(std::string(ok->begin(), ok->end()), "hello");
  EXPECT_TRUE(decode_base64("aGVsbG8", 100).ok());  // padding optional
  EXPECT_FALSE(decode_base64("aGVsbG8=", 4).ok());  // 5 bytes over a limit of 4
  EXPECT_FALSE(decode_base64("aGVs bG8=", 100).ok());
  EXPECT_FALSE(decode_base64("a", 100).ok());
  EXPECT_FALSE(decode_base64("aGVsbG8===", 100).ok());
}

}  // namespace
}  // namespace sniper::server
