// SPDX-License-Identifier: MIT
// gemma4 metadata -> layer plan: the E-model and MoE layouts of the fixtures (sliding pattern,
// per-layer head shapes and FFN widths, llama.cpp's shared-KV rule), and malformed metadata
// (a missing key, a pattern of the wrong length, head counts that do not divide) is an Error
// that names the key, never a crash.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"
#include "model/config.h"
#include "model/tensor_catalog.h"

namespace sniper {
namespace {

// syn-gemma4e-small's keys (6 layers S S F S S F, 3 shared), with `skip` left out and `change`
// applied last.
GgufWriter gemma4_writer(const std::string& skip = "", const std::function<void(GgufWriter&)>& change = {}) {
  GgufWriter w;
  const std::string a = "gemma4.";
  auto u32 = [&](const std::string& k, uint32_t v) {
    if (k != skip) w.set_u32(a + k, v);
  };
  auto f32 = [&](const std::string& k, float v) {
    if (k != skip) w.set_f32(a + k, v);
  };
  w.set_string("general.architecture", "gemma4");
  u32("block_count", 6);
  u32("context_length", 512);
  u32("embedding_length", 256);
  if (skip != "feed_forward_length") w.set_i32_array(a + "feed_forward_length", {256, 256, 256, 512, 512, 512});
  u32("attention.head_count", 4);
  u32("attention.head_count_kv", 2);
  f32("rope.freq_base", 1e6f);
  f32("rope.freq_base_swa", 1e4f);
  f32("attention.layer_norm_rms_epsilon", 1e-6f);
  u32("attention.key_length", 128);
  u32("attention.value_length", 128);
  f32("final_logit_softcapping", 30.0f);
  u32("attention.sliding_window", 16);
  u32("attention.shared_kv_layers", 3);
  u32("embedding_length_per_layer_input", 64);
  if (skip != "attention.sliding_window_pattern") {
    w.set_value(a + "attention.sliding_window_pattern",
                GgufValue::make_int_array(GgufValueType::kBool, {1, 1, 0, 1, 1, 0}));
  }
  u32("attention.key_length_swa", 64);
  u32("attention.value_length_swa", 64);
  u32("rope.dimension_count", 128);
  u32("rope.dimension_count_swa", 64);
  w.add_tensor_bytes("token_embd.weight", GgmlType::kF32, {256, 8}, std::vector<uint8_t>(256 * 8 * 4, 0));
  if (change) change(w);
  return w;
}

Result<ModelConfig> config_of(const GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto file = gguf_parse(bytes.data(), bytes.size());
  if (!file.ok()) return file.error();
  return load_model_config(*file);
}

TEST(Gemma4Config, EModelLayerPlan) {
  auto c = config_of(gemma4_writer());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->per_layer_dim, 64);
  EXPECT_FLOAT_EQ(c->final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(c->embd_scale, 16.0f);
  const int64_t window[6] = {16, 16, 0, 16, 16, 0}, head_dim[6] = {64, 64, 128, 64, 64, 128};
  const int64_t shared[6] = {-1, -1, -1, 1, 1, 2}, ff[6] = {256, 256, 256, 512, 512, 512};
  for (int64_t l = 0; l < 6; ++l) {
    const LayerPlan& lp = c->layer(l);
    SCOPED_TRACE(l);
    EXPECT_EQ(lp.mixer, MixerKind::kAttention);
    EXPECT_TRUE(lp.qk_norm && lp.v_norm && lp.v_optional && lp.attn_post_norm);
    EXPECT_EQ(lp.attn_scale, 1.0f);
    EXPECT_EQ(lp.ffn, FfnKind::kDense);
    EXPECT_EQ(lp.ffn_act, Activation::kGelu);
    EXPECT_TRUE(lp.ffn_post_norm);
    EXPECT_EQ(lp.sliding_window, window[l]);
    EXPECT_EQ(lp.head_dim, head_dim[l]);
    EXPECT_EQ(lp.rope_dims, head_dim[l]);
    EXPECT_FLOAT_EQ(lp.rope_base, window[l] ? 1e4f : 1e6f);
    EXPECT_EQ(lp.rope_freqs, window[l] == 0);
    EXPECT_EQ(lp.kv_shared_with, shared[l]);
    EXPECT_EQ(lp.ffn_dim, ff[l]);
    EXPECT_EQ(lp.n_kv_heads, 2);
  }
  // The state: sliding layers keep a ring of 2 * window, shared layers nothing of their own.
  const auto specs = layer_state_specs(*c);
  EXPECT_EQ(specs[0].window, 32);
  EXPECT_EQ(specs[2].window, 0);
  EXPECT_EQ(specs[3].kind, LayerStateKind::kSharedKv);
  EXPECT_EQ(specs[3].shared_with, 1);
}

TEST(Gemma4Config, MoeLayoutWithPerLayerKvHeads) {
  auto c = config_of(gemma4_writer("", [](GgufWriter& w) {
    w.set_u32("gemma4.attention.shared_kv_layers", 0);
    w.set_i32_array("gemma4.attention.head_count_kv", {2, 2, 2, 1, 1, 1});
    w.set_u32("gemma4.feed_forward_length", 128);
    w.set_u32("gemma4.expert_count", 8);
    w.set_u32("gemma4.expert_used_count", 2);
    w.set_u32("gemma4.expert_feed_forward_length", 64);
  }));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->expert_hidden_dim, 64);
  EXPECT_EQ(c->layer(0).ffn, FfnKind::kMoe);
  EXPECT_EQ(c->layer(0).shared_expert, SharedExpert::kUngated);
  EXPECT_EQ(c->layer(0).router_input, RouterInput::kScaledResidual);
  EXPECT_TRUE(c->layer(0).expert_input_norm && c->layer(0).expert_scale);
  EXPECT_TRUE(c->layer(0).routed_post_norm && c->layer(0).shared_post_norm && c->layer(0).ffn_post_norm);
  EXPECT_EQ(c->layer(0).n_kv_heads, 2);
  EXPECT_EQ(c->layer(5).n_kv_heads, 1);
  EXPECT_EQ(c->layer(5).kv_shared_with, -1);
  EXPECT_EQ(c->layer(5).ffn_dim, 128);
}

TEST(Gemma4Config, MissingKeysAreNamed) {
  for (const char* key : {"attention.sliding_window", "attention.sliding_window_pattern", "attention.key_length_swa",
                          "attention.value_length_swa", "attention.shared_kv_layers",
                          "embedding_length_per_layer_input", "feed_forward_length"}) {
    SCOPED_TRACE(key);
    auto c = config_of(gemma4_writer(key));
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find(key), std::string::npos) << c.error().message;
  }
  auto moe = config_of(gemma4_writer("", [](GgufWriter& w) {
    w.set_u32("gemma4.expert_count", 8);
    w.set_u32("gemma4.expert_used_count", 2);
  }));
  ASSERT_FALSE(moe.ok());
  EXPECT_NE(moe.error().message.find("expert_feed_forward_length"), std::string::npos) << moe.error().message;
}

TEST(Gemma4Config, MalformedValuesAreNamed) {
  struct Case {
    const char* what;
    std::function<void(GgufWriter&)> change;
    const char* expect_in_message;
  };
  const Case cases[] = {
      {"pattern too short",
       [](GgufWriter& w) {
         w.set_value("gemma4.attention.sliding_window_pattern",
                     GgufValue::make_int_array(GgufValueType::kBool, {1, 0}));
       },
       "sliding_window_pattern"},
      {"pattern too long",
       [](GgufWriter& w) {
         w.set_value("gemma4.attention.sliding_window_pattern",
                     GgufValue::make_int_array(GgufValueType::kBool, {1, 1, 0, 1, 1, 0, 1}));
       },
       "sliding_window_pattern"},
      {"head counts that do not divide", [](GgufWriter& w) { w.set_u32("gemma4.attention.head_count_kv", 3); },
       "head_count_kv"},
      {"per-layer kv heads that do not divide",
       [](GgufWriter& w) {
         w.set_i32_array("gemma4.attention.head_count_kv", {2, 2, 3, 2, 2, 2});
       },
       "head_count_kv"},
      {"per-layer kv heads of the wrong length",
       [](GgufWriter& w) {
         w.set_i32_array("gemma4.attention.head_count_kv", {2, 2});
       },
       "head_count_kv"},
      {"FFN widths of the wrong length",
       [](GgufWriter& w) {
         w.set_i32_array("gemma4.feed_forward_length", {256, 256});
       },
       "feed_forward_length"},
      {"value_length_swa differs", [](GgufWriter& w) { w.set_u32("gemma4.attention.value_length_swa", 32); },
       "value_length_swa"},
      {"too many shared layers", [](GgufWriter& w) { w.set_u32("gemma4.attention.shared_kv_layers", 6); },
       "shared_kv_layers"},
      {"odd sliding rope dims", [](GgufWriter& w) { w.set_u32("gemma4.rope.dimension_count_swa", 63); },
       "rope.dimension_count_swa"},
      {"sliding rope dims above the head", [](GgufWriter& w) { w.set_u32("gemma4.rope.dimension_count_swa", 128); },
       "rope.dimension_count_swa"},
      {"zero window", [](GgufWriter& w) { w.set_u32("gemma4.attention.sliding_window", 0); }, "sliding_window"},
      {"negative softcap", [](GgufWriter& w) { w.set_f32("gemma4.final_logit_softcapping", -1.0f); },
       "final_logit_softcapping"},
  };
  for (const Case& bc : cases) {
    SCOPED_TRACE(bc.what);
    auto c = config_of(gemma4_writer("", bc.change));
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find(bc.expect_in_message), std::string::npos) << c.error().message;
  }
}

// What streams, from the blocks' tables: fused experts do; their scales and the router scale stay
// resident; the per-layer embedding table is read by rows like the token embeddings; the MLP
// beside the experts is dense FFN; a shared-KV layer's own K/V, if the file has them, are unread.
TEST(Gemma4Config, TensorRoles) {
  auto c = config_of(gemma4_writer("", [](GgufWriter& w) {
    w.set_u32("gemma4.expert_count", 8);
    w.set_u32("gemma4.expert_used_count", 2);
    w.set_u32("gemma4.expert_feed_forward_length", 64);
    for (int l = 0; l < 6; ++l) {
      w.add_tensor_bytes("blk." + std::to_string(l) + ".ffn_gate_up_exps.weight", GgmlType::kF32, {1},
                         std::vector<uint8_t>(4, 0));
    }
  }));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->layer(3).expert_fused_gate_up);
  const TensorCatalog catalog(*c);
  auto role = [&](const char* name) {
    const TensorUse* u = catalog.find(name);
    EXPECT_NE(u, nullptr) << name;
    return u != nullptr ? u->role : TensorRole::kUnread;
  };
  EXPECT_EQ(role("blk.3.ffn_gate_up_exps.weight"), TensorRole::kExpert);
  EXPECT_EQ(catalog.find("blk.3.ffn_gate_up_exps.weight")->part, ExpertPart::kGateUp);
  EXPECT_EQ(catalog.find("blk.3.ffn_gate_up_exps.weight")->shape, tensor_shape(256, 128, 8));
  EXPECT_EQ(role("blk.3.ffn_down_exps.weight"), TensorRole::kExpert);
  EXPECT_EQ(role("blk.3.ffn_down_exps.scale"), TensorRole::kAlways);
  EXPECT_EQ(role("blk.3.ffn_gate_inp.scale"), TensorRole::kAlways);
  EXPECT_EQ(role("per_layer_token_embd.weight"), TensorRole::kEmbedding);
  EXPECT_EQ(role("per_layer_model_proj.weight"), TensorRole::kAlways);
  EXPECT_EQ(role("blk.0.ffn_gate.weight"), TensorRole::kDenseFfn);
  EXPECT_EQ(role("blk.0.post_attention_norm.weight"), TensorRole::kAlways);
  EXPECT_EQ(role("blk.0.attn_q.weight"), TensorRole::kAttention);
  EXPECT_EQ(role("blk.4.attn_k.weight"), TensorRole::kUnread);  // layer 4 reads layer 1's KV
  EXPECT_EQ(role("blk.4.attn_k_norm.weight"), TensorRole::kUnread);
  EXPECT_EQ(role("blk.0.attn_k.weight"), TensorRole::kAttention);
  EXPECT_EQ(catalog.find("blk.0.ffn_gate_exps.weight"), nullptr);  // fused here: the split form is not claimed
}

}  // namespace
}  // namespace sniper
