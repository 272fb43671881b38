// SPDX-License-Identifier: MIT
// Context shift (Session::shift_context, generate() with GenerateOptions::context_shift):
// after a shift, layer 0's keys equal keys computed at the new positions within rounding (f16,
// q8_0 and Hadamard-rotated q4_0 K); generation goes on past the context with the first n_keep
// tokens intact and without growing memory; off, a full context ends generation; models whose
// state cannot shift (delta-net, sliding windows) and bad arguments are clear errors.
#include "engine/session.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/fp16.h"
#include "base/process_stats.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "golden/shared_dir.h"
#include "kernels/hadamard.h"
#include "quant/quant.h"

namespace sniper {
namespace {

std::unique_ptr<Model> load(const std::string& name) {
  auto m = Model::load(shared_dir() + "/models/" + name, {});
  EXPECT_TRUE(m.ok()) << m.error().message;
  return m.ok() ? std::move(m).value() : nullptr;
}

std::unique_ptr<Session> session(Model& model, int64_t n_ctx, KvConfig kv = KvConfig()) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  so.batch = 16;
  so.n_threads = 2;
  so.kv_type = kv;
  auto s = Session::create(model, so);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

std::vector<int32_t> tokens(int64_t n, int64_t vocab) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>(1 + (i * 37 + 11) % (vocab - 1)));
  return ids;
}

double nse(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return num / den;
}

struct ShiftCase {
  const char* model;
  KvConfig kv;
  double k_bound;  // NMSE of layer 0's shifted keys against keys computed at the new positions
};

// Layer 0's K and V rows of the first n positions, decoded to f32 (un-rotated).
std::vector<float> layer0_rows(const Session& s, int64_t n, bool keys) {
  const KvSlot slot = s.state().kv_slot(0);
  const KvCache& kv = *slot.cache;
  const AttentionLayout& lay = kv.layout();
  std::vector<uint8_t> saved(kv.saved_bytes(n));
  kv.save_layer(slot.index, n, saved.data());
  const int64_t hd = kv.head_dim(), width = kv.n_kv_heads() * hd;
  std::vector<float> out(static_cast<size_t>(n * width));
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t h = 0; h < kv.n_kv_heads(); ++h) {
      float* dst = out.data() + p * width + h * hd;
      if (keys) {
        dequantize_row_ref(lay.k_type, saved.data() + kv.position_bytes() * p + lay.head_bytes * h, dst, hd);
        if (lay.k_rot > 0) hadamard_rotate(dst, hd, lay.k_rot);
      } else if (!lay.v_transposed) {
        const uint8_t* v = saved.data() + kv.position_bytes() * n + kv.v_position_bytes() * p + lay.v_head_bytes * h;
        dequantize_row_ref(lay.v_type, v, dst, hd);
        if (lay.v_rot > 0) hadamard_rotate(dst, hd, lay.v_rot);
      } else {
        for (int64_t i = 0; i < hd; ++i) {
          const uint8_t* v = saved.data() + kv.position_bytes() * n + sizeof(fp16_t) * ((h * hd + i) * n + p);
          dequantize_row_ref(lay.v_type, v, dst + i, 1);
        }
      }
    }
  }
  return out;
}

// What a shift can be checked against exactly: layer 0's keys and values depend only on the
// token and its position (deeper layers' also on the tokens it attended to, which the shift
// drops, so no fresh evaluation reproduces them; that is why llama.cpp's output after a shift
// differs from re-evaluating). After shifting 40 tokens (keep 4, drop 16), layer 0's keys equal
// those a fresh session computes for the 24 kept tokens at their new positions within rounding
// (two conversions of the cache type for a quantized K), and its values are the same; then
// decoding goes on and the next layer-0 rows land at the shifted positions.
TEST(ContextShift, ShiftedKeysEqualKeysComputedAtTheNewPositions) {
  for (const ShiftCase& c :
       {ShiftCase{"syn-llama.gguf", KvConfig(), 1e-6}, ShiftCase{"syn-qwen3.gguf", KvConfig(), 1e-6},
        ShiftCase{"syn-qwen3.gguf", KvConfig(KvType::kQ8_0, KvType::kQ8_0, FlashAttn::kOn), 1e-4},
        ShiftCase{"syn-qwen3.gguf", KvConfig(KvType::kQ4_0, KvType::kQ4_0, FlashAttn::kOn), 3e-2}}) {
    SCOPED_TRACE(std::string(c.model) + " " + kv_config_name(c.kv));
    auto model = load(c.model);
    ASSERT_NE(model, nullptr);
    const std::vector<int32_t> ids = tokens(42, model->config().vocab_size);
    auto a = session(*model, 64, c.kv);
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(a->eval(std::span<const int32_t>(ids.data(), 40)).ok());
    const std::vector<float> k_before = layer0_rows(*a, 40, true);
    ASSERT_TRUE(a->shift_context(4, 16).ok());
    ASSERT_EQ(a->n_past(), 24);
    std::vector<int32_t> kept(ids.begin(), ids.begin() + 4);
    kept.insert(kept.end(), ids.begin() + 20, ids.begin() + 40);
    EXPECT_EQ(a->history(), kept);
    for (int i = 40; i < 42; ++i) {
      kept.push_back(ids[static_cast<size_t>(i)]);
      const int32_t one[1] = {ids[static_cast<size_t>(i)]};
      ASSERT_TRUE(a->eval(one).ok());
    }
    auto fresh = session(*model, 64, c.kv);
    ASSERT_TRUE(fresh->eval(kept).ok());
    const int64_t n = a->n_past();
    ASSERT_EQ(n, 26);
    const std::vector<float> k_shift = layer0_rows(*a, n, true), k_fresh = layer0_rows(*fresh, n, true);
    const std::vector<float> v_shift = layer0_rows(*a, n, false), v_fresh = layer0_rows(*fresh, n, false);
    EXPECT_LT(nse(k_shift, k_fresh), c.k_bound);
    EXPECT_LT(nse(v_shift, v_fresh), 1e-6);
    // The moved keys were really rotated: as they were before the shift they are far off.
    const size_t width = k_shift.size() / static_cast<size_t>(n);
    const std::vector<float> moved(k_shift.begin() + 4 * width, k_shift.begin() + 24 * width);
    const std::vector<float> stale(k_before.begin() + 20 * width, k_before.begin() + 40 * width);
    EXPECT_GT(nse(moved, stale), 10 * c.k_bound);
  }
}

TEST(ContextShift, GenerationGoesPastTheContextWithThePrefixKeptAndFlatMemory) {
  auto model = load("syn-qwen3.gguf");
  ASSERT_NE(model, nullptr);
  auto tok = model->tokenizer();
  ASSERT_TRUE(tok.ok());
  const std::vector<int32_t> prompt = tokens(10, model->config().vocab_size);
  auto s = session(*model, 32);
  ASSERT_NE(s, nullptr);
  GenerateOptions go;
  go.n_predict = 40;
  go.stop_at_eog = false;
  go.context_shift = true;
  go.n_keep = resolve_n_keep(3, prompt, -1);
  ASSERT_EQ(go.n_keep, 3);
  auto warm = generate(*s, **tok, prompt, go, nullptr);  // first shifts: any lazy allocation happens here
  ASSERT_TRUE(warm.ok()) << warm.error().message;
  EXPECT_EQ(warm->n_gen, 40);
  EXPECT_GE(warm->n_shifts, 1);
  const uint64_t rss = current_rss_bytes();
  const size_t bytes = s->memory_bytes();
  go.n_predict = 300;
  auto stats = generate(*s, **tok, {}, go, nullptr);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->n_gen, 300);
  EXPECT_EQ(stats->finish_reason, "length");
  EXPECT_GE(stats->n_shifts, 300 / 16);  // each shift frees (31 - 3) / 2 = 14 positions
  EXPECT_LT(s->n_past(), 32);
  EXPECT_EQ(std::vector<int32_t>(s->history().begin(), s->history().begin() + 3),
            std::vector<int32_t>(prompt.begin(), prompt.begin() + 3));
  EXPECT_EQ(s->memory_bytes(), bytes);
  EXPECT_LT(current_rss_bytes(), rss + (4u << 20));  // 300 tokens and ~20 shifts later, no growth

  // Off: the full context ends generation, as before.
  auto off = session(*model, 32);
  go.context_shift = false;
  auto ended = generate(*off, **tok, prompt, go, nullptr);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(ended->finish_reason, "context");
  EXPECT_EQ(off->n_past(), 32);
}

TEST(ContextShift, KeepFollowsLlamaCpp) {
  const std::vector<int32_t> prompt = {1, 7, 8, 9};
  EXPECT_EQ(resolve_n_keep(0, prompt, 1), 1);  // BOS is always kept
  EXPECT_EQ(resolve_n_keep(2, prompt, 1), 3);
  EXPECT_EQ(resolve_n_keep(2, prompt, -1), 2);  // no BOS in this vocabulary
  EXPECT_EQ(resolve_n_keep(-1, prompt, 1), 4);  // the whole prompt
  EXPECT_EQ(resolve_n_keep(9, prompt, 1), 4);
}

TEST(ContextShift, UnshiftableModelsAndBadArgumentsAreErrors) {
  for (const auto& [name, why] : std::vector<std::pair<const char*, const char*>>{
           {"syn-qwen35-small.gguf", "recurrent state"}, {"syn-gemma4e-small.gguf", "sliding window"}}) {
    SCOPED_TRACE(name);
    auto model = load(name);
    ASSERT_NE(model, nullptr);
    auto s = session(*model, 64);
    const std::vector<int32_t> ids = tokens(20, model->config().vocab_size);
    ASSERT_TRUE(s->eval(ids).ok());
    Status st = s->shift_context(2, 8);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find(why), std::string::npos) << st.error().message;
    EXPECT_EQ(s->n_past(), 20);  // nothing changed
    auto tok = model->tokenizer();
    ASSERT_TRUE(tok.ok());
    GenerateOptions go;
    go.context_shift = true;
    auto gen = generate(*s, **tok, ids, go, nullptr);
    ASSERT_FALSE(gen.ok());
    EXPECT_NE(gen.error().message.find("--context-shift"), std::string::npos) << gen.error().message;
  }
  auto model = load("syn-llama.gguf");
  ASSERT_NE(model, nullptr);
  auto s = session(*model, 64);
  ASSERT_TRUE(s->eval(tokens(20, model->config().vocab_size)).ok());
  EXPECT_FALSE(s->shift_context(-1, 4).ok());
  EXPECT_FALSE(s->shift_context(4, 0).ok());
  Status past = s->shift_context(10, 11);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("20"), std::string::npos) << past.error().message;
  EXPECT_EQ(s->n_past(), 20);
  // --keep covering the whole context leaves nothing to discard.
  Status full = shift_full_context(*s, 20);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("nothing left to discard"), std::string::npos) << full.error().message;
}

}  // namespace
}  // namespace sniper
