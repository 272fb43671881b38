// SPDX-License-Identifier: MIT
// Prompts with images through the language model, against llama.cpp's libmtmd
// (../shared/reference/mm: gemma4v with Gemma 4's non-causal image attention and sliding window;
// qwen3vl_merger with Qwen3.5's M-RoPE image positions):
//   * the prompt's cells are mtmd's chunks (text ids, BOS, begin/end text, the image's tokens);
//   * logits per row within NMSE 1e-4, top-1 equal where the reference margin is >= 0.03;
//   * streamed language model weights and a streamed projector give the resident run's bits;
//   * a second turn over the same image reuses the image's KV rows (and gives the first turn's
//     bits), another image does not; truncating inside an image keeps it whole or not at all;
//   * a prompt evaluated in slices (chat's reused prefix, head and tail) gives the whole prompt's
//     logits (its bits when cut at the image's bounds);
//   * a saved context with an image (version 4) restores, continues with the same bits, reuses the
//     image by hash, and refuses a damaged media table;
//   * a non-causal image longer than one forward, or markers that do not match the images, fail
//     with errors that name the numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/generate.h"
#include "engine/media_prompt.h"
#include "engine/model.h"
#include "engine/session.h"
#include "engine/session_state.h"
#include "golden/shared_dir.h"
#include "media/mmproj.h"
#include "media/test_reference_files.h"

namespace sniper {
namespace {

using test::read_bytes;
using test::read_f32;

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  const char* name;
  const char* model;
};

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
  std::unique_ptr<Mmproj> mmproj;
};

Loaded open_case(const Case& c, ResidencyMode residency = ResidencyMode::kAuto, bool stream_projector = false,
                 int64_t batch = 0) {
  Loaded r;
  MmprojOptions mo;
  mo.stream_layers = stream_projector;
  auto mm = Mmproj::load(shared_dir() + "/models/mm/syn-" + std::string(c.name).substr(4) + ".mmproj.gguf", mo);
  EXPECT_TRUE(mm.ok()) << mm.error().message;
  r.mmproj = std::move(mm).value();
  ModelLoadOptions lo;
  lo.residency = residency;
  lo.batch = batch;
  lo.n_ctx = 512;
  if (r.mmproj->vision_config().non_causal) lo.media_chunk_tokens = r.mmproj->vision_config().max_tokens;
  auto model = Model::load(shared_dir() + "/models/" + c.model + ".gguf", lo);
  EXPECT_TRUE(model.ok()) << model.error().message;
  r.model = std::move(model).value();
  SessionOptions so;
  so.batch = r.model->planned_batch();
  so.n_threads = 2;
  so.n_checkpoints = 4;
  auto s = Session::create(*r.model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  r.session = std::move(s).value();
  return r;
}

MediaChunk encode(Loaded& r, const std::string& image_path) {
  auto chunk = r.mmproj->encode(read_bytes(image_path), r.session->pool());
  EXPECT_TRUE(chunk.ok()) << chunk.error().message;
  return std::move(chunk).value();
}

// The prompt's last row, then one row per teacher-forced id.
std::vector<float> rows_of(Loaded& r, const MediaPrompt& prompt, const std::vector<int32_t>& gen) {
  Status st = r.session->eval_prompt(prompt);
  EXPECT_TRUE(st.ok()) << st.error().message;
  std::vector<float> rows = r.session->last_logits();
  for (int32_t id : gen) {
    const int32_t one[1] = {id};
    st = r.session->eval(one);
    EXPECT_TRUE(st.ok()) << st.error().message;
    rows.insert(rows.end(), r.session->last_logits().begin(), r.session->last_logits().end());
  }
  return rows;
}

class MediaLogits : public ::testing::TestWithParam<Case> {};

TEST_P(MediaLogits, MatchesLibmtmd) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  Loaded r = open_case(c);
  ASSERT_NE(r.session, nullptr);
  const MediaChunk chunk = encode(r, dir + "/img.png");
  auto tok = r.model->tokenizer();
  ASSERT_TRUE(tok.ok());
  std::vector<MediaChunk> media = {chunk};
  auto prompt = build_media_prompt(**tok, r.model->config(), read_text(dir + "/prompt.txt"), media, true);
  ASSERT_TRUE(prompt.ok()) << prompt.error().message;
  // mtmd's chunks: text ids, then the image (tokens, positions), then text.
  const nlohmann::json chunks = nlohmann::json::parse(read_text(dir + "/chunks.json"));
  ASSERT_EQ(prompt->pieces.size(), chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    const PromptPiece& piece = prompt->pieces[i];
    if (chunks[i]["type"] == 0) {
      ASSERT_EQ(piece.media, nullptr) << i;
      EXPECT_EQ(piece.tokens, chunks[i]["ids"].get<std::vector<int32_t>>()) << "text chunk " << i;
    } else {
      ASSERT_NE(piece.media, nullptr) << i;
      EXPECT_EQ(piece.media->n_tokens(), chunks[i]["n_tokens"].get<int64_t>());
      EXPECT_EQ(media_n_pos(r.model->config(), *piece.media), chunks[i]["n_pos"].get<int64_t>());
    }
  }
  const std::vector<int32_t> gen = nlohmann::json::parse(read_text(dir + "/gen_ids.json")).get<std::vector<int32_t>>();
  const std::vector<float> got = rows_of(r, *prompt, gen);
  const std::vector<float> want = read_f32(dir + "/logits.f32");
  const size_t vocab = static_cast<size_t>(r.model->config().vocab_size);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t row = 0; row * vocab < want.size(); ++row) {
    const float* a = got.data() + row * vocab;
    const float* b = want.data() + row * vocab;
    double num = 0, den = 0;
    size_t top_a = 0, top_b = 0;
    for (size_t i = 0; i < vocab; ++i) {
      num += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
      den += static_cast<double>(b[i]) * b[i];
      if (a[i] > a[top_a]) top_a = i;
      if (b[i] > b[top_b]) top_b = i;
    }
    float second = -INFINITY;
    for (size_t i = 0; i < vocab; ++i) {
      if (i != top_b) second = std::max(second, b[i]);
    }
    worst = std::max(worst, num / den);
    EXPECT_LE(num / den, 1e-4) << "row " << row;
    if (b[top_b] - second >= 0.03f) {
      EXPECT_EQ(top_a, top_b) << "row " << row;
    }
  }
  std::printf("%s: worst row NMSE %.3g over %zu rows\n", c.name, worst, want.size() / vocab);
}

TEST_P(MediaLogits, StreamedEqualsResident) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  std::vector<float> first;
  for (int variant = 0; variant < 2; ++variant) {
    Loaded r = variant == 0 ? open_case(c) : open_case(c, ResidencyMode::kStream, /*stream_projector=*/true);
    ASSERT_NE(r.session, nullptr);
    EXPECT_EQ(r.mmproj->streams(), variant == 1);
    EXPECT_EQ(r.model->streams(), variant == 1);
    std::vector<MediaChunk> media = {encode(r, dir + "/img.png")};
    auto tok = r.model->tokenizer();
    auto prompt = build_media_prompt(**tok, r.model->config(), read_text(dir + "/prompt.txt"), media, true);
    ASSERT_TRUE(prompt.ok());
    std::vector<float> rows = media[0].embd;
    const std::vector<float> logits = rows_of(r, *prompt, {5, 9});
    rows.insert(rows.end(), logits.begin(), logits.end());
    if (variant == 0) {
      first = rows;
    } else {
      ASSERT_EQ(rows.size(), first.size());
      EXPECT_EQ(0, std::memcmp(rows.data(), first.data(), rows.size() * sizeof(float)));
    }
  }
}

TEST_P(MediaLogits, SecondTurnReusesTheImage) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  Loaded r = open_case(c);
  ASSERT_NE(r.session, nullptr);
  auto tok = r.model->tokenizer();
  std::vector<MediaChunk> media = {encode(r, dir + "/img.png")};
  const std::string text = read_text(dir + "/prompt.txt");
  auto turn1 = build_media_prompt(**tok, r.model->config(), text, media, true);
  ASSERT_TRUE(turn1.ok());
  const std::vector<float> fresh = rows_of(r, *turn1, {});
  // Turn two: the same image (same bytes, so the same hash), more text after.
  auto turn2 = build_media_prompt(**tok, r.model->config(), text + " And the colours?", media, true);
  ASSERT_TRUE(turn2.ok());
  const int64_t shared = r.session->common_prefix(*turn2);
  EXPECT_EQ(shared, turn1->n_cells());
  EXPECT_EQ(r.session->truncate(shared), shared);
  const std::vector<float> second = rows_of(r, *turn2, {});
  // The same prompt from scratch gives the same bits.
  Loaded fresh_run = open_case(c);
  std::vector<MediaChunk> media2 = {encode(fresh_run, dir + "/img.png")};
  auto turn2b = build_media_prompt(**tok, fresh_run.model->config(), text + " And the colours?", media2, true);
  const std::vector<float> scratch = rows_of(fresh_run, *turn2b, {});
  ASSERT_EQ(second.size(), scratch.size());
  EXPECT_EQ(0, std::memcmp(second.data(), scratch.data(), second.size() * sizeof(float)));
  // Another image: the prefix stops at the image's start, and truncating into an image keeps it
  // whole or not at all.
  MediaChunk other = media[0];
  other.hash.bytes[0] ^= 1;
  std::vector<MediaChunk> other_media = {other};
  auto turn3 = build_media_prompt(**tok, r.model->config(), text, other_media, true);
  const int64_t image_start = turn1->spans[0].start;
  EXPECT_EQ(r.session->common_prefix(*turn3), image_start);
  EXPECT_LE(r.session->reusable_prefix(image_start + 3), image_start);
  const int64_t kept = r.session->truncate(image_start + 3);
  EXPECT_LE(kept, image_start);
  EXPECT_TRUE(r.session->media_spans().empty());
  (void)fresh;
}

// A prompt evaluated in slices (what chat does: the cells past the reused prefix, a head up to a
// checkpoint, then the rest through generate_media) gives the bits of the whole prompt at once
// when cut at the image's bounds, and its logits up to float rounding when cut inside text,
// and eval_media_prompt's progress can stop it between pieces; a slice bound inside the image is
// refused by name.
TEST_P(MediaLogits, SlicedPromptGivesTheSameBits) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  Loaded whole = open_case(c);
  ASSERT_NE(whole.session, nullptr);
  auto tok = whole.model->tokenizer();
  std::vector<MediaChunk> media = {encode(whole, dir + "/img.png")};
  auto prompt = build_media_prompt(**tok, whole.model->config(), read_text(dir + "/prompt.txt"), media, true);
  ASSERT_TRUE(prompt.ok());
  const std::vector<float> expected = rows_of(whole, *prompt, {});
  const MediaSpan& span = prompt->spans[0];
  const int64_t n = prompt->n_cells();
  for (const int64_t cut : {int64_t{1}, span.start, span.end(), n - 1}) {
    Loaded r = open_case(c);
    auto head = slice_prompt(*prompt, 0, cut);
    auto tail = slice_prompt(*prompt, cut, n);
    ASSERT_TRUE(head.ok() && tail.ok()) << cut;
    EXPECT_EQ(head->n_cells() + tail->n_cells(), n);
    EXPECT_EQ(head->spans.size() + tail->spans.size(), 1u);
    auto done = eval_media_prompt(*r.session, *head, {});
    ASSERT_TRUE(done.ok()) << done.error().message;
    EXPECT_EQ(*done, cut);
    done = eval_media_prompt(*r.session, *tail, {});
    ASSERT_TRUE(done.ok()) << done.error().message;
    EXPECT_EQ(r.session->history(), prompt->cells);
    EXPECT_EQ(r.session->media_spans(), prompt->spans);
    const std::vector<float>& got = r.session->last_logits();
    ASSERT_EQ(got.size(), expected.size());
    if (cut == span.start || cut == span.end()) {
      // The text pieces are evaluated as one eval() each either way: the same bits.
      EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), expected.size() * sizeof(float))) << "cut at " << cut;
    } else {
      // A text piece cut in two takes batches of other sizes, whose kernels sum in another order
      // (as session_test's chunking): rounding only, carried through the q8 activations of the
      // quantized layers (gemma4moe-small measured 4.9e-8, qwen35moe-small under 1e-9).
      double num = 0, den = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        num += (got[i] - expected[i]) * (got[i] - expected[i]);
        den += expected[i] * expected[i];
      }
      EXPECT_LT(num / den, 1e-6) << "cut at " << cut;
      EXPECT_EQ(std::max_element(got.begin(), got.end()) - got.begin(),
                std::max_element(expected.begin(), expected.end()) - expected.begin())
          << "cut at " << cut;
    }
  }
  // Progress that says stop after the image: the text after it is not evaluated.
  Loaded stopped = open_case(c);
  int64_t calls = 0;
  auto done = eval_media_prompt(*stopped.session, *prompt, [&](int64_t d, int64_t total) {
    ++calls;
    EXPECT_EQ(total, n);
    return d < span.end();
  });
  ASSERT_TRUE(done.ok()) << done.error().message;
  EXPECT_EQ(*done, span.end());
  EXPECT_GE(calls, 2);
  auto inside = slice_prompt(*prompt, span.start + 1, n);
  ASSERT_FALSE(inside.ok());
  EXPECT_NE(inside.error().message.find("inside the media chunk"), std::string::npos) << inside.error().message;
  auto outside = slice_prompt(*prompt, 0, n + 1);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("outside"), std::string::npos) << outside.error().message;
}

// A saved context with an image (version 4: the media table) restores into a new session, which
// continues with the same bits as the session that evaluated the image, reuses the image by hash,
// and names the image when asked to rewind into it (its embeddings are not in the file).
TEST_P(MediaLogits, SavedContextKeepsTheImage) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  Loaded r = open_case(c);
  ASSERT_NE(r.session, nullptr);
  auto tok = r.model->tokenizer();
  std::vector<MediaChunk> media = {encode(r, dir + "/img.png")};
  const std::string text = read_text(dir + "/prompt.txt");
  auto turn1 = build_media_prompt(**tok, r.model->config(), text, media, true);
  ASSERT_TRUE(turn1.ok());
  rows_of(r, *turn1, {});
  auto fp = model_fingerprint(r.model->gguf());
  ASSERT_TRUE(fp.ok());
  const SessionState state = capture_session_state(*r.session, *fp);
  ASSERT_EQ(state.media.size(), 1u);
  EXPECT_EQ(state.media[0], turn1->spans[0]);
  const std::string bytes = serialize_session_state(state);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  EXPECT_EQ(version, kSessionStateMediaVersion);
  auto parsed = parse_session_state(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->media, state.media);
  EXPECT_EQ(parsed->tokens, state.tokens);

  SessionOptions so;
  so.batch = r.model->planned_batch();
  so.n_threads = 2;
  auto restored = Session::create(*r.model, so);
  ASSERT_TRUE(restored.ok());
  ASSERT_TRUE(check_compatible(*parsed, **restored, *fp).ok());
  restore_session_state(*parsed, **restored);
  EXPECT_EQ((*restored)->media_spans(), state.media);
  // The next turn: the same image (by hash) and more text; both sessions evaluate only the text.
  auto turn2 = build_media_prompt(**tok, r.model->config(), text + " And the colours?", media, true);
  ASSERT_TRUE(turn2.ok());
  const int64_t shared = (*restored)->common_prefix(*turn2);
  EXPECT_EQ(shared, turn1->n_cells());
  ASSERT_EQ(r.session->common_prefix(*turn2), shared);
  ASSERT_TRUE(r.session->eval_prompt(*turn2).ok());
  ASSERT_TRUE((*restored)->eval_prompt(*turn2).ok());
  ASSERT_EQ(r.session->last_logits().size(), (*restored)->last_logits().size());
  EXPECT_EQ(0, std::memcmp(r.session->last_logits().data(), (*restored)->last_logits().data(),
                           r.session->last_logits().size() * sizeof(float)));
  // Rewinding into the image needs the image again: the error says which.
  int64_t redo = 0;
  Status st = (*restored)->rewind(turn1->spans[0].start + 1, &redo);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("send the media again"), std::string::npos) << st.error().message;

  // A damaged media table is an error that says what is wrong (the checksum is redone each time).
  auto damaged = [&](size_t at, int64_t value) {
    std::string b = bytes.substr(0, bytes.size() - 8);
    std::memcpy(b.data() + at, &value, sizeof(value));
    const uint64_t h = fnv1a64(b.data(), b.size());
    b.append(reinterpret_cast<const char*>(&h), sizeof(h));
    return parse_session_state(b);
  };
  const size_t table = 72 + state.tokens.size() * 4;
  for (auto [at, value, what] : std::vector<std::tuple<size_t, int64_t, const char*>>{
           {table, 0, "media table holds 0"},
           {table + 8, state.media[0].start + 1, "covers cell"},
           {table + 8, -1, "out of range"},
           {table + 16, 0, "out of range"},
           {table + 24, state.media[0].n_tokens + 1, "out of range"}}) {
    auto bad = damaged(at, value);
    ASSERT_FALSE(bad.ok()) << what;
    EXPECT_NE(bad.error().message.find(what), std::string::npos) << bad.error().message;
  }
  // A text-only session still writes version 3.
  auto text_only = Session::create(*r.model, so);
  ASSERT_TRUE(text_only.ok());
  const std::vector<int32_t> ids = {1, 2, 3};
  ASSERT_TRUE((*text_only)->eval(ids).ok());
  const std::string v3 = serialize_session_state(capture_session_state(**text_only, *fp));
  std::memcpy(&version, v3.data() + 8, 4);
  EXPECT_EQ(version, kSessionStateVersion);
}

TEST_P(MediaLogits, ErrorsNameTheProblem) {
  const Case& c = GetParam();
  const std::string dir = shared_dir() + "/reference/mm/" + c.name;
  Loaded r = open_case(c);
  ASSERT_NE(r.session, nullptr);
  auto tok = r.model->tokenizer();
  std::vector<MediaChunk> media = {encode(r, dir + "/img.png")};
  auto two_markers = build_media_prompt(**tok, r.model->config(), "a <__media__> b <__media__>", media, true);
  ASSERT_FALSE(two_markers.ok());
  EXPECT_NE(two_markers.error().message.find("2 media markers"), std::string::npos) << two_markers.error().message;
  MediaChunk narrow = media[0];
  narrow.dim = 8;
  narrow.embd.resize(static_cast<size_t>(narrow.n_tokens() * 8));
  Status st = r.session->eval_media(narrow);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("width 8"), std::string::npos) << st.error().message;
  if (media[0].non_causal) {
    // A session whose forward takes fewer tokens than the image.
    Loaded small = open_case(c, ResidencyMode::kAuto, false, 16);
    SessionOptions so;
    so.batch = 16;
    so.n_threads = 2;
    auto s = Session::create(*small.model, so);
    ASSERT_TRUE(s.ok());
    st = (*s)->eval_media(media[0]);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("at most 16"), std::string::npos) << st.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, MediaLogits,
                         ::testing::Values(Case{"syn-gemma4v-small", "syn-gemma4moe-small"},
                                           Case{"syn-qwen3vl-small", "syn-qwen35moe-small"}),
                         [](const auto& info) {
                           std::string s = info.param.name;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace sniper
