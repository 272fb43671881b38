// SPDX-License-Identifier: MIT
// KV state persistence: a captured, serialized and restored session continues with bitwise the
// same logits as the original (f16 transposed V and q8_0, into a different context size);
// corrupt, truncated, foreign-model and wrong-shape states are refused with clear errors and
// leave the target session untouched. Over HTTP: /v1/context/save|load|list|delete, prefix
// reuse from a loaded context, and the refusals with their status codes.
#include "engine/session_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kv/kv_values.h"
#include "server/test_server.h"

namespace sniper::server {
namespace {

std::unique_ptr<Model> load_model(const std::string& name, int64_t n_ctx = 512) {
  ModelLoadOptions lo;
  lo.n_ctx = n_ctx;
  auto m = Model::load(models_dir() + "/" + name, lo);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m).value() : nullptr;
}

std::unique_ptr<Session> new_session(Model& model, int64_t n_ctx, KvConfig kv = KvConfig()) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  so.n_threads = 2;
  so.kv_type = kv;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<int32_t> prompt_ids(int n, int32_t vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 7919 + 13) % vocab));
  return ids;
}

void expect_round_trip_bitwise(const std::string& name, KvConfig kv) {
  SCOPED_TRACE(name + " " + kv_config_name(kv));
  auto model = load_model(name);
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  ASSERT_TRUE(fp.ok());
  const auto vocab = static_cast<int32_t>(model->config().vocab_size);
  const std::vector<int32_t> ids = prompt_ids(150, vocab);
  auto a = new_session(*model, 256, kv);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->eval(ids).ok());
  const std::string bytes = serialize_session_state(capture_session_state(*a, *fp));
  auto state = parse_session_state(bytes);
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->tokens, ids);
  auto b = new_session(*model, 512, kv);  // another context size: the transposed V rows move
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(check_compatible(*state, *b, *fp).ok());
  restore_session_state(*state, *b);
  EXPECT_EQ(b->history(), ids);
  for (int32_t next : {5, 77, 123}) {
    const int32_t one[1] = {next};
    ASSERT_TRUE(a->eval(one).ok());
    ASSERT_TRUE(b->eval(one).ok());
    EXPECT_EQ(a->last_logits(), b->last_logits());
  }
}

TEST(SessionState, RoundTripGivesBitIdenticalLogits) {
  expect_round_trip_bitwise("stories260K.gguf", KvType::kF16);
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", KvType::kF16);
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", KvType::kQ8_0);
  // Hybrid models: the delta-net layers' conv and recurrent states travel with the KV rows.
  expect_round_trip_bitwise("syn-qwen35moe-small.gguf", KvType::kF16);
  expect_round_trip_bitwise("syn-qwen35-Q4_K_M.gguf", KvType::kQ8_0);
  // gemma4: 150 tokens wrap the sliding layers' 32-slot rings (window 16) several times; the
  // rings travel in slot order, the shared-KV layers read their source layer's rows.
  expect_round_trip_bitwise("syn-gemma4e-small.gguf", KvType::kF16);
  expect_round_trip_bitwise("syn-gemma4moe-small.gguf", KvType::kF16);
  expect_round_trip_bitwise("syn-gemma4e-small.gguf", KvType::kQ8_0);
}

struct LogitError {
  double nmse = 0;    // sum (restored - recomputed)^2 / sum recomputed^2, worst of the steps
  double cosine = 1;  // worst of the steps
  size_t bytes = 0;   // of the saved file
};

LogitError logit_error(const std::vector<float>& want, const std::vector<float>& got) {
  double num = 0, den = 0, dot = 0, gg = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * static_cast<double>(got[i] - want[i]);
    den += want[i] * static_cast<double>(want[i]);
    dot += got[i] * static_cast<double>(want[i]);
    gg += got[i] * static_cast<double>(got[i]);
  }
  LogitError e;
  e.nmse = num / den;
  e.cosine = dot / std::sqrt(den * gg);
  return e;
}

// Saves a session after `n_prompt` tokens with `c`, restores it into a fresh session and
// compares the next tokens' logits with the session that computed them.
LogitError compressed_round_trip(Model& model, KvType kv, ContextCompression c, int n_prompt) {
  auto fp = model_fingerprint(model.gguf());
  EXPECT_TRUE(fp.ok());
  const std::vector<int32_t> ids = prompt_ids(n_prompt, static_cast<int32_t>(model.config().vocab_size));
  auto a = new_session(model, 512, kv);
  EXPECT_TRUE(a->eval(ids).ok());
  const SessionState captured = capture_session_state(*a, *fp);
  EXPECT_TRUE(check_compressible(captured, c).ok());
  const std::string bytes = serialize_session_state(captured, c);
  auto state = parse_session_state(bytes);
  EXPECT_TRUE(state.ok()) << state.error().message;
  LogitError err;
  err.bytes = bytes.size();
  if (!state.ok()) return err;
  EXPECT_EQ(state->tokens, ids);
  EXPECT_EQ(state->kv.size(), captured.kv.size());
  auto b = new_session(model, 512, kv);
  EXPECT_TRUE(check_compatible(*state, *b, *fp).ok());
  restore_session_state(*state, *b);
  for (int32_t next : {5, 77, 123}) {
    const int32_t one[1] = {next};
    EXPECT_TRUE(a->eval(one).ok());
    EXPECT_TRUE(b->eval(one).ok());
    const LogitError e = logit_error(a->last_logits(), b->last_logits());
    err.nmse = std::max(err.nmse, e.nmse);
    err.cosine = std::min(err.cosine, e.cosine);
  }
  return err;
}

TEST(SessionState, CompressedContextsRestoreWithinBounds) {
  auto model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(model, nullptr);
  constexpr int kPrompt = 300;
  const LogitError exact = compressed_round_trip(*model, KvType::kF16, ContextCompression::kNone, kPrompt);
  EXPECT_EQ(exact.nmse, 0.0);
  // The yardstick: what running with a q8_0 KV cache instead of f16 costs the same logits.
  LogitError cache_q8;
  {
    const std::vector<int32_t> ids = prompt_ids(kPrompt, static_cast<int32_t>(model->config().vocab_size));
    auto f16 = new_session(*model, 512, KvType::kF16);
    auto q8 = new_session(*model, 512, KvType::kQ8_0);
    ASSERT_TRUE(f16->eval(ids).ok() && q8->eval(ids).ok());
    for (int32_t next : {5, 77, 123}) {
      const int32_t one[1] = {next};
      ASSERT_TRUE(f16->eval(one).ok() && q8->eval(one).ok());
      const LogitError e = logit_error(f16->last_logits(), q8->last_logits());
      cache_q8.nmse = std::max(cache_q8.nmse, e.nmse);
      cache_q8.cosine = std::min(cache_q8.cosine, e.cosine);
    }
    std::printf("yardstick: a q8_0 KV cache instead of f16: logits NMSE %.3g, cosine %.6f\n", cache_q8.nmse,
                cache_q8.cosine);
  }
  for (KvType kv : {KvType::kF16, KvType::kQ8_0}) {
    for (ContextCompression c : {ContextCompression::kQ8_0, ContextCompression::kQ4_0}) {
      const LogitError e = compressed_round_trip(*model, kv, c, kPrompt);
      const double ratio = static_cast<double>(exact.bytes) / static_cast<double>(e.bytes);
      std::printf("kv %s, compression %s: %zu bytes (%.2fx smaller than f16 exact), logits NMSE %.3g, cosine %.6f\n",
                  kv_type_name(kv), context_compression_name(c), e.bytes, ratio, e.nmse, e.cosine);
      if (c == ContextCompression::kQ8_0) {
        EXPECT_GT(ratio, 1.8);
        if (kv == KvType::kQ8_0) {
          EXPECT_EQ(e.nmse, 0.0);  // q8_0 rows requantized to q8_0 are the same rows
        } else {
          // Saving f16 rows as q8_0 costs about what computing with a q8_0 cache costs (measured
          // 5.3e-4 against 5.2e-4: the same rounding of the same rows); bound at 2x the yardstick.
          EXPECT_LT(e.nmse, 2 * cache_q8.nmse + 1e-5);
          EXPECT_GT(e.cosine, 0.999);
        }
      } else {
        // q4_0's step is max/7 against q8_0's max/127; measured 4.1e-3 NMSE, cosine 0.998 (the
        // issue's published figure for 4x is cosine 0.993). Bounds at about 2.5x the measured error.
        EXPECT_GT(ratio, 3.4);
        EXPECT_LT(e.nmse, 1e-2);
        EXPECT_GT(e.cosine, 0.995);
      }
    }
  }
}

TEST(SessionState, CompressionNeedsWholeBlocksPerHead) {
  auto model = load_model("stories260K.gguf");  // head_dim 8
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  ASSERT_TRUE(fp.ok());
  auto a = new_session(*model, 128);
  ASSERT_TRUE(a->eval(prompt_ids(20, 512)).ok());
  const SessionState state = capture_session_state(*a, *fp);
  Status st = check_compressible(state, ContextCompression::kQ4_0);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("head_dim"), std::string::npos) << st.error().message;
  EXPECT_TRUE(check_compressible(state, ContextCompression::kNone).ok());
  EXPECT_FALSE(parse_context_compression("q5_0").ok());
  EXPECT_EQ(*parse_context_compression("q4_0"), ContextCompression::kQ4_0);
}

TEST(SessionState, RefusesMalformedCompressedFiles) {
  auto model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  ASSERT_TRUE(fp.ok());
  auto a = new_session(*model, 128);
  ASSERT_TRUE(a->eval(prompt_ids(40, 512)).ok());
  std::string bytes = serialize_session_state(capture_session_state(*a, *fp), ContextCompression::kQ8_0);
  ASSERT_TRUE(parse_session_state(bytes).ok());
  auto reseal = [](std::string b) {  // recompute the trailer so the structure checks are reached
    const uint64_t h = fnv1a64(b.data(), b.size() - 8);
    std::memcpy(b.data() + b.size() - 8, &h, 8);
    return b;
  };
  std::string bad = bytes;
  bad[40] = 7;  // unknown compression
  auto r = parse_session_state(reseal(bad));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("compression is 7"), std::string::npos) << r.error().message;
  bad = bytes;
  bad[40] = 2;  // claims q4_0: q8_0-sized sections are not whole q4_0 positions, or too many
  r = parse_session_state(reseal(bad));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("compressed context"), std::string::npos) << r.error().message;
}

TEST(SessionState, RoundTripEveryKvType) {
  // Every K / V cache type, with and without flash attention where llama.cpp allows it, and
  // K and V of different types: the file stores the types and the bytes as they are.
  for (KvType t : {KvType::kBF16, KvType::kQ4_0, KvType::kQ4_1, KvType::kIQ4_NL, KvType::kQ5_0, KvType::kQ5_1}) {
    expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", t);
  }
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOn));
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kQ8_0, KvType::kF16, FlashAttn::kOff));
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kBF16, KvType::kBF16, FlashAttn::kOff));
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kQ4_0, KvType::kQ8_0, FlashAttn::kOn));
  KvConfig norot(KvType::kQ4_1, KvType::kQ5_1, FlashAttn::kOn);
  norot.rotate = false;
  expect_round_trip_bitwise("syn-qwen3-Q4_K_M.gguf", norot);
  // A hybrid model's attention layers take the types too.
  expect_round_trip_bitwise("syn-qwen35-Q4_K_M.gguf", KvConfig(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn));
}

TEST(SessionState, KvConfigTravelsAndMismatchesAreRefused) {
  auto model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  ASSERT_TRUE(fp.ok());
  const KvConfig saved_kv(KvType::kQ4_1, KvType::kQ8_0, FlashAttn::kOn);
  auto a = new_session(*model, 64, saved_kv);
  ASSERT_NE(a, nullptr);
  ASSERT_TRUE(a->eval(prompt_ids(20, 512)).ok());
  auto parsed = parse_session_state(serialize_session_state(capture_session_state(*a, *fp)));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->kv_type.k, KvType::kQ4_1);
  EXPECT_EQ(parsed->kv_type.v, KvType::kQ8_0);
  EXPECT_TRUE(parsed->kv_type.flash());
  EXPECT_TRUE(parsed->kv_type.rotate);
  // Other types, another V, no rotation: each refused with both configs named.
  KvConfig norot = saved_kv;
  norot.rotate = false;
  for (const KvConfig& other : {KvConfig(KvType::kQ4_0, KvType::kQ8_0, FlashAttn::kOn),
                                KvConfig(KvType::kQ4_1, KvType::kQ4_1, FlashAttn::kOn), norot}) {
    auto b = new_session(*model, 64, other);
    ASSERT_NE(b, nullptr);
    Status st = check_compatible(*parsed, *b, *fp);
    ASSERT_FALSE(st.ok()) << kv_config_name(other);
    EXPECT_NE(st.error().message.find("K q4_1, V q8_0, flash attention"), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find(kv_config_name(other)), std::string::npos) << st.error().message;
  }
  // f16 with -fa auto and with -fa off hold the same bytes (auto resolves to off for f16).
  auto f16 = new_session(*model, 64, KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOff));
  ASSERT_TRUE(f16->eval(prompt_ids(5, 512)).ok());
  auto f16_state = parse_session_state(serialize_session_state(capture_session_state(*f16, *fp)));
  ASSERT_TRUE(f16_state.ok());
  auto f16_auto = new_session(*model, 64);
  EXPECT_TRUE(check_compatible(*f16_state, *f16_auto, *fp).ok());
  auto f16_fa = new_session(*model, 64, KvConfig(KvType::kF16, KvType::kF16, FlashAttn::kOn));
  EXPECT_FALSE(check_compatible(*f16_state, *f16_fa, *fp).ok());  // V rows, not V^T
}

TEST(SessionState, ReadsVersion2Files) {
  // A version 2 file (kv type 0 = f16 or 1 = q8_0 at byte 12, zeros at 32..39) is what this
  // build writes for f16 without flash attention, apart from the version: rewrite the version,
  // fix the checksum, and it loads as f16 / f16 without flash attention.
  auto model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  ASSERT_TRUE(fp.ok());
  auto a = new_session(*model, 64);
  ASSERT_TRUE(a->eval(prompt_ids(12, 512)).ok());
  std::string bytes = serialize_session_state(capture_session_state(*a, *fp));
  const uint32_t v2 = 2;
  std::memcpy(bytes.data() + 8, &v2, sizeof(v2));
  std::memset(bytes.data() + 32, 0, 8);
  const uint64_t sum = fnv1a64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &sum, sizeof(sum));
  auto parsed = parse_session_state(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->kv_type.k, KvType::kF16);
  EXPECT_EQ(parsed->kv_type.v, KvType::kF16);
  EXPECT_FALSE(parsed->kv_type.flash());
  auto b = new_session(*model, 64);
  EXPECT_TRUE(check_compatible(*parsed, *b, *fp).ok());
  // A version 2 q8_0 file held unrotated q8_0 rows for K and V (with flash attention): what this
  // build writes for that configuration, with the version 2 header.
  KvConfig q8_kv(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn);
  q8_kv.rotate = false;
  auto c = new_session(*model, 64, q8_kv);
  ASSERT_TRUE(c->eval(prompt_ids(12, 512)).ok());
  std::string q8_bytes = serialize_session_state(capture_session_state(*c, *fp));
  std::memcpy(q8_bytes.data() + 8, &v2, sizeof(v2));
  uint32_t q8 = 1;
  std::memcpy(q8_bytes.data() + 12, &q8, sizeof(q8));
  std::memset(q8_bytes.data() + 32, 0, 8);
  const uint64_t sum2 = fnv1a64(q8_bytes.data(), q8_bytes.size() - 8);
  std::memcpy(q8_bytes.data() + q8_bytes.size() - 8, &sum2, sizeof(sum2));
  auto parsed_q8 = parse_session_state(q8_bytes);
  ASSERT_TRUE(parsed_q8.ok()) << parsed_q8.error().message;
  EXPECT_EQ(parsed_q8->kv_type.v, KvType::kQ8_0);
  EXPECT_TRUE(parsed_q8->kv_type.flash());
  EXPECT_FALSE(parsed_q8->kv_type.rotate);
  EXPECT_TRUE(check_compatible(*parsed_q8, *new_session(*model, 64, q8_kv), *fp).ok());
}

TEST(SessionState, RefusesCorruptForeignAndMismatchedStates) {
  auto model = load_model("stories260K.gguf");
  auto other = load_model("stories260K-Q8_0.gguf");
  ASSERT_NE(model, nullptr);
  ASSERT_NE(other, nullptr);
  auto fp = model_fingerprint(model->gguf());
  auto fp_other = model_fingerprint(other->gguf());
  ASSERT_TRUE(fp.ok() && fp_other.ok());
  EXPECT_NE(*fp, *fp_other);
  auto again = model_fingerprint(model->gguf());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*fp, *again);

  auto a = new_session(*model, 128);
  ASSERT_TRUE(a->eval(prompt_ids(40, 512)).ok());
  const SessionState state = capture_session_state(*a, *fp);
  const std::string bytes = serialize_session_state(state);

  // Every single flipped byte is caught (checksum, or magic/version checked before it).
  for (size_t at : {size_t{0}, size_t{9}, size_t{20}, size_t{60}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    std::string bad = bytes;
    bad[at] ^= 0x20;
    auto r = parse_session_state(bad);
    EXPECT_FALSE(r.ok()) << "flip at " << at;
  }
  {
    std::string bad = bytes;
    bad[bytes.size() / 2] ^= 1;
    auto r = parse_session_state(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("checksum"), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(parse_session_state(bytes.substr(0, bytes.size() - 9)).ok());
  EXPECT_FALSE(parse_session_state("short").ok());
  std::string future = bytes;
  future[8] = 9;
  auto v = parse_session_state(future);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.error().message.find("version"), std::string::npos) << v.error().message;
  // A version 1 file (KV rows only, from before per-layer sequence state) is refused by name.
  std::string v1 = bytes;
  v1[8] = 1;
  auto old = parse_session_state(v1);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("version 1"), std::string::npos) << old.error().message;
  EXPECT_NE(old.error().message.find("older sniper"), std::string::npos) << old.error().message;

  // Another model file (same shape, other weights): refused, naming the model.
  auto b = new_session(*other, 128);
  ASSERT_TRUE(b->eval(prompt_ids(3, 512)).ok());
  Status st = check_compatible(state, *b, *fp_other);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("another model"), std::string::npos) << st.error().message;
  EXPECT_EQ(b->n_past(), 3);  // untouched
  // Another KV type and a context too small.
  auto q8_model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(q8_model, nullptr);
  auto fp_q = model_fingerprint(q8_model->gguf());
  ASSERT_TRUE(fp_q.ok());
  auto f16 = new_session(*q8_model, 128);
  ASSERT_TRUE(f16->eval(prompt_ids(10, 512)).ok());
  const SessionState f16_state = capture_session_state(*f16, *fp_q);
  auto q8 = new_session(*q8_model, 128, KvType::kQ8_0);
  ASSERT_NE(q8, nullptr);
  {
    Status t = check_compatible(f16_state, *q8, *fp_q);
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("KV cache"), std::string::npos) << t.error().message;
  }
  auto small = new_session(*model, 16);
  Status s = check_compatible(state, *small, *fp);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("context"), std::string::npos) << s.error().message;
  // A layer whose state shape differs (another head_dim) is refused, naming the layer.
  {
    SessionState reshaped = state;
    reshaped.layers[1].head_dim *= 2;
    auto c = new_session(*model, 128);
    Status r = check_compatible(reshaped, *c, *fp);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("layer 1"), std::string::npos) << r.error().message;
  }

  // Files are written atomically and read back equal.
  const std::string path = ::testing::TempDir() + "/sniper_state_test.ctx";
  ASSERT_TRUE(write_session_state_file(path, state).ok());
  auto back = read_session_state_file(path);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->tokens, state.tokens);
  EXPECT_EQ(back->kv, state.kv);
  EXPECT_EQ(back->layers, state.layers);
  EXPECT_EQ(back->layer_bytes, state.layer_bytes);
  std::filesystem::remove(path);
}

// Issue 40 finding 6: a state with a valid checksum whose values are not finite loaded, and its
// NaN rows then poisoned every request that reused the slot. Each kind of value is checked: f16
// and bf16 K and V (rows and transposed), the scales of every block type, recurrent states, and
// compressed files (checked after decompression).
TEST(SessionState, NonFiniteValuesAreRefused) {
  struct Case {
    const char* model;
    KvConfig kv;
  } cases[] = {
      {"syn-qwen3-Q4_K_M.gguf", KvConfig()},  // f16 K, transposed f16 V
      {"syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kBF16, KvType::kBF16, FlashAttn::kOff)},
      {"syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn)},
      {"syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kQ4_1, KvType::kQ5_1, FlashAttn::kOn)},
      {"syn-qwen3-Q4_K_M.gguf", KvConfig(KvType::kIQ4_NL, KvType::kQ5_0, FlashAttn::kOn)},
      {"syn-qwen35-Q4_K_M.gguf", KvConfig(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn)},  // recurrent layers
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + kv_config_name(c.kv));
    auto model = load_model(c.model);
    ASSERT_NE(model, nullptr);
    auto fp = model_fingerprint(model->gguf());
    ASSERT_TRUE(fp.ok());
    auto session = new_session(*model, 64, c.kv);
    ASSERT_NE(session, nullptr);
    ASSERT_TRUE(session->eval(prompt_ids(20, static_cast<int32_t>(model->config().vocab_size))).ok());
    const SessionState good = capture_session_state(*session, *fp);
    ASSERT_TRUE(parse_session_state(serialize_session_state(good)).ok());
    // Poison one value of each section kind in turn: the first bytes of a KV layer's K part
    // (an f16 value or a block's scale d), its V part, a q4_1/q5_1 block's minimum m, and a
    // recurrent state's float.
    size_t at = 0;
    for (size_t l = 0; l < good.layers.size(); ++l) {
      const LayerStateSpec& spec = good.layers[l];
      const size_t bytes = good.layer_bytes[l];
      std::vector<size_t> offsets;
      if (spec.kind == LayerStateKind::kKv) {
        const int64_t kv_dim = spec.n_kv_heads * spec.head_dim;
        const size_t k_row = kv_values_bytes(good.kv_type.k, kv_dim), v_row = kv_values_bytes(good.kv_type.v, kv_dim);
        const size_t m = bytes / (k_row + v_row);
        offsets = {at, at + k_row * m, at + k_row * m + (v_row * m) / 2};
        if (good.kv_type.k == KvType::kQ4_1) offsets.push_back(at + 2);  // K's first block's m
      } else if (spec.kind == LayerStateKind::kRecurrent) {
        offsets = {at, at + bytes - 4};
      }
      for (size_t off : offsets) {
        SessionState bad = good;
        const uint8_t nan_bytes[4] = {0xff, 0xff, 0xff, 0xff};  // NaN as f16, bf16 and f32
        std::memcpy(bad.kv.data() + off, nan_bytes, 4);
        auto r = parse_session_state(serialize_session_state(bad));
        ASSERT_FALSE(r.ok()) << "layer " << l << " offset " << off - at;
        EXPECT_NE(r.error().message.find("non-finite"), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find("layer " + std::to_string(l)), std::string::npos) << r.error().message;
      }
      at += bytes;
    }
  }
  // A compressed file whose q8_0 block scale is NaN: refused after decompression.
  auto model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  auto session = new_session(*model, 64);
  ASSERT_TRUE(session->eval(prompt_ids(20, static_cast<int32_t>(model->config().vocab_size))).ok());
  std::string bytes = serialize_session_state(capture_session_state(*session, *fp), ContextCompression::kQ8_0);
  // The file layout (session_state.h): header, tokens, per-layer records, then the sections.
  const size_t first_section = 72 + 20 * 4 + static_cast<size_t>(session->state().n_layers()) * 64;
  bytes[first_section] = static_cast<char>(0xff);
  bytes[first_section + 1] = static_cast<char>(0x7f);  // f16 0x7fff: NaN
  const uint64_t h = fnv1a64(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
  auto r = parse_session_state(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("non-finite"), std::string::npos) << r.error().message;
}

// A context with media (file version 4: a media table after the tokens) goes through the same
// value and layout checks as a text-only one: a NaN in a KV section, and a section that is not a
// whole number of positions, are refused.
TEST(SessionState, MediaContextsGetTheSameValueChecks) {
  auto model = load_model("syn-qwen3-Q4_K_M.gguf");
  ASSERT_NE(model, nullptr);
  auto fp = model_fingerprint(model->gguf());
  ASSERT_TRUE(fp.ok());
  auto session = new_session(*model, 64);
  ASSERT_NE(session, nullptr);
  ASSERT_TRUE(session->eval(prompt_ids(20, static_cast<int32_t>(model->config().vocab_size))).ok());
  SessionState good = capture_session_state(*session, *fp);
  // Cells 4..9 stand for an image (the parser checks the table against the tokens, not the KV).
  MediaSpan span;
  span.start = 4;
  span.n_tokens = 6;
  span.n_pos = 6;
  span.kind = MediaKind::kImage;
  span.hash.bytes.fill(0xab);
  for (int64_t c = span.start; c < span.end(); ++c) good.tokens[static_cast<size_t>(c)] = kMediaToken;
  good.media = {span};
  const std::string bytes = serialize_session_state(good);
  uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, sizeof(version));
  ASSERT_EQ(version, kSessionStateMediaVersion);
  auto parsed = parse_session_state(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->media.size(), 1u);
  EXPECT_EQ(parsed->media[0].start, 4);

  SessionState nan = good;
  const uint8_t nan_bytes[2] = {0xff, 0x7f};  // f16 NaN at the first K value of layer 0
  std::memcpy(nan.kv.data(), nan_bytes, 2);
  auto r = parse_session_state(serialize_session_state(nan));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("non-finite"), std::string::npos) << r.error().message;

  SessionState ragged = good;
  ragged.kv.push_back(0);
  ragged.layer_bytes.back() += 1;
  r = parse_session_state(serialize_session_state(ragged));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not a whole number of positions"), std::string::npos) << r.error().message;
}

// --- over HTTP ---

httplib::Result post(TestServer& s, const std::string& path, const TJson& body) {
  return s.client()->Post(path.c_str(), body.dump(), "application/json");
}

TEST(ContextHttp, SaveLoadListDeleteAndReuse) {
  const std::string dir = ::testing::TempDir() + "/sniper_ctx_http";
  std::filesystem::remove_all(dir);
  ServerOptions o;
  o.n_slots = 1;
  o.context_dir = dir;
  TestServer server(models_dir() + "/stories260K.gguf", o, 512);
  ASSERT_TRUE(server.ok()) << server.error();
  std::string story = "Once upon a time, there was a little girl named Lily. She loved to play outside";
  for (int i = 0; i < 3; ++i) story += " with her friends in the park and the sun was shining";
  story += ".";
  auto save = post(server, "/v1/context/save", {{"name", "story-1"}, {"prompt", story}});
  ASSERT_TRUE(save);
  ASSERT_EQ(save->status, 200) << save->body;
  auto sj = TJson::parse(save->body);
  const int64_t n_tokens = sj["n_tokens"];
  EXPECT_GT(n_tokens, 40);
  EXPECT_GT(sj["bytes"].get<int64_t>(), 0);
  EXPECT_TRUE(sj["ms"].is_number());

  const TJson req = {{"prompt", story + " One day"}, {"max_tokens", 24}, {"temperature", 0}};
  auto first = post(server, "/v1/completions", req);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200) << first->body;
  auto fj = TJson::parse(first->body);
  // The slot still holds the saved prompt: only the new tokens are evaluated.
  EXPECT_EQ(fj["usage"]["prompt_tokens_details"]["cached_tokens"], n_tokens);
  // Something else takes the only slot...
  auto other = post(server, "/v1/completions", {{"prompt", "The cat sat"}, {"max_tokens", 4}});
  ASSERT_TRUE(other);
  ASSERT_EQ(other->status, 200);
  // ...the saved context comes back...
  auto load = post(server, "/v1/context/load", {{"name", "story-1"}});
  ASSERT_TRUE(load);
  ASSERT_EQ(load->status, 200) << load->body;
  EXPECT_EQ(TJson::parse(load->body)["n_tokens"], n_tokens);
  // ...and the same request reuses it and gives exactly the same text.
  auto second = post(server, "/v1/completions", req);
  ASSERT_TRUE(second);
  auto tj = TJson::parse(second->body);
  EXPECT_EQ(tj["usage"]["prompt_tokens_details"]["cached_tokens"], n_tokens);
  EXPECT_EQ(tj["choices"][0]["text"], fj["choices"][0]["text"]);

  auto cli = server.client();
  auto list = cli->Get("/v1/context");
  ASSERT_TRUE(list);
  auto lj = TJson::parse(list->body);
  EXPECT_EQ(lj["object"], "list");
  ASSERT_EQ(lj["data"].size(), 1u);
  EXPECT_EQ(lj["data"][0]["name"], "story-1");
  EXPECT_EQ(lj["data"][0]["n_tokens"], n_tokens);
  EXPECT_GT(lj["data"][0]["created"].get<int64_t>(), 1600000000);

  // Chat messages can be saved too.
  auto chat = post(server, "/v1/context/save",
                   {{"name", "chat.v1"}, {"messages", {{{"role", "system"}, {"content", "You tell stories."}}}}});
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 200) << chat->body;

  // Bad names, unknown names.
  for (const char* bad : {"../etc/passwd", "", ".hidden", "a/b", "x y"}) {
    auto r = post(server, "/v1/context/save", {{"name", bad}, {"prompt", "x"}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
  }
  auto missing = post(server, "/v1/context/load", {{"name", "nope"}});
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto del_missing = cli->Delete("/v1/context/nope");
  ASSERT_TRUE(del_missing);
  EXPECT_EQ(del_missing->status, 404);

  // A corrupted file is refused (400, naming the checksum) and the server keeps serving.
  const std::string path = dir + "/story-1.ctx";
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    char c = 0;
    f.seekg(200);
    f.get(c);
    f.seekp(200);
    f.put(static_cast<char>(c ^ 0x5a));
  }
  auto corrupt = post(server, "/v1/context/load", {{"name", "story-1"}});
  ASSERT_TRUE(corrupt);
  EXPECT_EQ(corrupt->status, 400) << corrupt->body;
  EXPECT_NE(corrupt->body.find("checksum"), std::string::npos) << corrupt->body;

  auto del = cli->Delete("/v1/context/story-1");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_FALSE(std::filesystem::exists(path));
  auto ok = post(server, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// A hybrid model (delta-net layers) with state checkpoints: a saved or loaded context is
// checkpointed at its end, so requests that continue it in different ways each reuse all of it.
TEST(ContextHttp, HybridContextIsReusedByDifferentContinuations) {
  const std::string dir = ::testing::TempDir() + "/sniper_ctx_hybrid";
  std::filesystem::remove_all(dir);
  ServerOptions o;
  o.n_slots = 1;
  o.context_dir = dir;
  o.session.n_checkpoints = 4;
  TestServer server(models_dir() + "/syn-qwen35moe-small.gguf", o, 256);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string doc = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  auto save = post(server, "/v1/context/save", {{"name", "doc"}, {"prompt", doc}});
  ASSERT_TRUE(save);
  ASSERT_EQ(save->status, 200) << save->body;
  const int64_t n_tokens = TJson::parse(save->body)["n_tokens"];
  auto complete = [&](const std::string& prompt) {
    auto r = post(server, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}});
    EXPECT_TRUE(r);
    return r ? TJson::parse(r->body) : TJson::object();
  };
  auto first = complete(doc + " One day");
  EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], n_tokens);
  auto other = complete(doc + " The sun");  // departs from the first request right after the doc
  EXPECT_EQ(other["usage"]["prompt_tokens_details"]["cached_tokens"], n_tokens);
  auto load = post(server, "/v1/context/load", {{"name", "doc"}});
  ASSERT_TRUE(load);
  ASSERT_EQ(load->status, 200) << load->body;
  auto again = complete(doc + " One day");
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], n_tokens);
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
  auto other_again = complete(doc + " The sun");
  EXPECT_EQ(other_again["usage"]["prompt_tokens_details"]["cached_tokens"], n_tokens);
  EXPECT_EQ(other_again["choices"][0]["text"], other["choices"][0]["text"]);
}

TEST(ContextHttp, StateOfAnotherModelIsRefused) {
  const std::string dir = ::testing::TempDir() + "/sniper_ctx_models";
  std::filesystem::remove_all(dir);
  ServerOptions o;
  o.context_dir = dir;
  {
    TestServer a(models_dir() + "/stories260K.gguf", o, 256);
    ASSERT_TRUE(a.ok()) << a.error();
    auto r = post(a, "/v1/context/save", {{"name", "s"}, {"prompt", "Once upon a time"}});
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
  }
  TestServer b(models_dir() + "/stories260K-Q8_0.gguf", o, 256);
  ASSERT_TRUE(b.ok()) << b.error();
  auto r = post(b, "/v1/context/load", {{"name", "s"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 409) << r->body;
  EXPECT_NE(r->body.find("another model"), std::string::npos) << r->body;
  auto ok = post(b, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

TEST(ContextHttp, CompressedSaveLoadsAndSaysSo) {
  const std::string dir = ::testing::TempDir() + "/sniper_ctx_compressed";
  std::filesystem::remove_all(dir);
  ServerOptions o;
  o.context_dir = dir;
  o.context_compression = ContextCompression::kQ8_0;  // serve --context-compression q8_0
  TestServer server(models_dir() + "/syn-qwen3-Q4_K_M.gguf", o, 256);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string prompt = "the quick brown fox jumps over the lazy dog and runs far away into the woods";
  auto exact = post(server, "/v1/context/save", {{"name", "exact"}, {"prompt", prompt}, {"compression", "none"}});
  auto q8 = post(server, "/v1/context/save", {{"name", "q8"}, {"prompt", prompt}});
  auto q4 = post(server, "/v1/context/save", {{"name", "q4"}, {"prompt", prompt}, {"compression", "q4_0"}});
  ASSERT_TRUE(exact && q8 && q4);
  ASSERT_EQ(exact->status, 200) << exact->body;
  ASSERT_EQ(q8->status, 200) << q8->body;
  ASSERT_EQ(q4->status, 200) << q4->body;
  EXPECT_EQ(TJson::parse(exact->body)["compression"], "none");
  EXPECT_EQ(TJson::parse(q8->body)["compression"], "q8_0");
  EXPECT_EQ(TJson::parse(q4->body)["compression"], "q4_0");
  const int64_t b_exact = TJson::parse(exact->body)["bytes"], b_q8 = TJson::parse(q8->body)["bytes"],
                b_q4 = TJson::parse(q4->body)["bytes"];
  EXPECT_LT(b_q8, b_exact);
  EXPECT_LT(b_q4, b_q8);
  // The file says so (header byte 40), and it loads into the f16 slot.
  std::ifstream f(dir + "/q4.ctx", std::ios::binary);
  char header[48];
  ASSERT_TRUE(f.read(header, sizeof(header)));
  EXPECT_EQ(header[40], static_cast<char>(ContextCompression::kQ4_0));
  auto load = post(server, "/v1/context/load", {{"name", "q4"}});
  ASSERT_TRUE(load);
  EXPECT_EQ(load->status, 200) << load->body;
  auto bad = post(server, "/v1/context/save", {{"name", "x"}, {"prompt", prompt}, {"compression", "q2_k"}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("\"param\":\"compression\""), std::string::npos) << bad->body;
}

TEST(ContextHttp, CompressionOfAnUnsupportedShapeIsA400) {
  const std::string dir = ::testing::TempDir() + "/sniper_ctx_compressed_small";
  std::filesystem::remove_all(dir);
  ServerOptions o;
  o.context_dir = dir;
  TestServer server(models_dir() + "/stories260K.gguf", o, 256);  // head_dim 8
  ASSERT_TRUE(server.ok()) << server.error();
  auto r = post(server, "/v1/context/save", {{"name", "s"}, {"prompt", "Once upon a time"}, {"compression", "q4_0"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("head_dim"), std::string::npos) << r->body;
  EXPECT_FALSE(std::filesystem::exists(dir + "/s.ctx"));
}

// Issue 40 finding 6 over HTTP: a context file whose KV data is all NaN (checksum valid) loaded
// with 200, and every later request returned empty text, even after loading a good context,
// until a restart. Now the load is a 400 naming the problem, and the requests before and after
// it give the same text.
TEST(ContextHttp, PoisonedContextIsRefusedAndLeavesNothingBehind) {
  const std::string dir = ::testing::TempDir() + "/sniper_ctx_poison";
  std::filesystem::remove_all(dir);
  ServerOptions o;
  o.n_slots = 2;
  o.context_dir = dir;
  TestServer server(models_dir() + "/stories260K.gguf", o, 256);
  ASSERT_TRUE(server.ok()) << server.error();
  const std::string story = "Once upon a time, there was a little girl named Lily. She loved to play outside.";
  auto save = post(server, "/v1/context/save", {{"name", "good"}, {"prompt", story}});
  ASSERT_TRUE(save);
  ASSERT_EQ(save->status, 200) << save->body;
  // The same state with every KV byte 0xff (NaN as f16), re-checksummed: the file.
  auto state = read_session_state_file(dir + "/good.ctx");
  ASSERT_TRUE(state.ok()) << state.error().message;
  SessionState poison = *state;
  std::fill(poison.kv.begin(), poison.kv.end(), uint8_t{0xff});
  ASSERT_TRUE(write_session_state_file(dir + "/poison.ctx", poison).ok());

  const TJson req = {{"prompt", "The cat sat on the"}, {"max_tokens", 12}, {"temperature", 0}};
  auto before = post(server, "/v1/completions", req);
  ASSERT_TRUE(before);
  ASSERT_EQ(before->status, 200);
  const std::string text = TJson::parse(before->body)["choices"][0]["text"];
  ASSERT_FALSE(text.empty());

  for (int i = 0; i < 2; ++i) {  // one load per slot, as a poisoned server had both slots poisoned
    auto load = post(server, "/v1/context/load", {{"name", "poison"}});
    ASSERT_TRUE(load);
    EXPECT_EQ(load->status, 400) << load->body;
    EXPECT_NE(load->body.find("non-finite"), std::string::npos) << load->body;
    EXPECT_EQ(TJson::parse(load->body)["error"]["code"], "invalid_context_file");
  }
  for (const TJson& r : {req, TJson{{"prompt", story + " One day"}, {"max_tokens", 12}, {"temperature", 0}}}) {
    auto after = post(server, "/v1/completions", r);
    ASSERT_TRUE(after);
    ASSERT_EQ(after->status, 200);
    EXPECT_FALSE(TJson::parse(after->body)["choices"][0]["text"].get<std::string>().empty()) << after->body;
  }
  auto again = post(server, "/v1/completions", req);
  ASSERT_TRUE(again);
  EXPECT_EQ(TJson::parse(again->body)["choices"][0]["text"], text);
  auto load = post(server, "/v1/context/load", {{"name", "good"}});
  ASSERT_TRUE(load);
  EXPECT_EQ(load->status, 200) << load->body;
  again = post(server, "/v1/completions", req);
  ASSERT_TRUE(again);
  EXPECT_EQ(TJson::parse(again->body)["choices"][0]["text"], text);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sniper::server
