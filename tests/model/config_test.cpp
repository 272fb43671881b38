// SPDX-License-Identifier: MIT
// ModelConfig from GGUF metadata: valid files load, and every missing or out-of-range key
// is an Error that names it.
#include "model/config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "gguf/reader.h"
#include "gguf/writer.h"

namespace sniper {
namespace {

// A minimal metadata set for `arch`, with an f32 token_embd [dim=64, vocab=32].
GgufWriter base_writer(const std::string& arch) {
  GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_u32(arch + ".embedding_length", 64);
  w.set_u32(arch + ".block_count", 2);
  w.set_u32(arch + ".feed_forward_length", 128);
  w.set_u32(arch + ".attention.head_count", 4);
  w.set_u32(arch + ".attention.head_count_kv", 2);
  w.set_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(arch + ".context_length", 256);
  w.add_tensor_bytes("token_embd.weight", GgmlType::kF32, {64, 32}, std::vector<uint8_t>(64 * 32 * 4, 0));
  return w;
}

Result<ModelConfig> config_of(const GgufWriter& w) {
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto file = gguf_parse(bytes.data(), bytes.size());
  if (!file.ok()) return file.error();
  return load_model_config(*file);
}

TEST(ModelConfig, LlamaDefaults) {
  auto c = config_of(base_writer("llama"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->dim, 64);
  EXPECT_EQ(c->head_dim, 16);
  EXPECT_EQ(c->rope_dims, 16);
  EXPECT_EQ(c->vocab_size, 32);
  EXPECT_EQ(c->rope_style, RopeStyle::kNorm);
  EXPECT_TRUE(c->tied_embeddings);
  EXPECT_FALSE(c->is_moe());
}

TEST(ModelConfig, ArchSwitches) {
  auto q2 = config_of(base_writer("qwen2"));
  ASSERT_TRUE(q2.ok()) << q2.error().message;
  EXPECT_TRUE(q2->qkv_bias);
  EXPECT_EQ(q2->rope_style, RopeStyle::kNeox);
  auto q3 = config_of(base_writer("qwen3"));
  ASSERT_TRUE(q3.ok());
  EXPECT_TRUE(q3->qk_norm);
  GgufWriter moe = base_writer("qwen3moe");
  moe.set_u32("qwen3moe.expert_count", 8);
  moe.set_u32("qwen3moe.expert_used_count", 2);
  moe.set_u32("qwen3moe.expert_feed_forward_length", 32);
  auto m = config_of(moe);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->n_experts, 8);
  EXPECT_EQ(m->expert_hidden_dim, 32);
}

struct BadCase {
  const char* what;
  std::function<void(GgufWriter&)> mutate;
  const char* expect_in_message;
};

TEST(ModelConfig, BadMetadataNamesTheKey) {
  const std::vector<BadCase> cases = {
      {"unknown arch", [](GgufWriter& w) { w.set_string("general.architecture", "gpt-j"); }, "gpt-j"},
      {"missing dim", [](GgufWriter& w) { w.set_u32("llama.embedding_length", 0); }, "llama.embedding_length"},
      {"kv heads", [](GgufWriter& w) { w.set_u32("llama.attention.head_count_kv", 3); }, "head_count_kv"},
      {"eps", [](GgufWriter& w) { w.set_f32("llama.attention.layer_norm_rms_epsilon", -1.0f); },
       "layer_norm_rms_epsilon"},
      {"eps type", [](GgufWriter& w) { w.set_string("llama.attention.layer_norm_rms_epsilon", "x"); },
       "layer_norm_rms_epsilon"},
      {"rope base", [](GgufWriter& w) { w.set_f32("llama.rope.freq_base", 0.5f); }, "rope.freq_base"},
      {"rope scaling", [](GgufWriter& w) { w.set_string("llama.rope.scaling.type", "yarn"); }, "rope.scaling.type"},
      {"odd rope dims", [](GgufWriter& w) { w.set_u32("llama.rope.dimension_count", 7); }, "rope.dimension_count"},
      {"too many used experts",
       [](GgufWriter& w) {
         w.set_u32("llama.expert_count", 4);
         w.set_u32("llama.expert_used_count", 5);
       },
       "expert_used_count"},
  };
  for (const BadCase& bc : cases) {
    GgufWriter w = base_writer("llama");
    bc.mutate(w);
    auto c = config_of(w);
    ASSERT_FALSE(c.ok()) << bc.what;
    EXPECT_NE(c.error().message.find(bc.expect_in_message), std::string::npos) << bc.what << ": " << c.error().message;
  }
  GgufWriter dense_moe = base_writer("qwen3moe");
  auto c = config_of(dense_moe);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("expert_count"), std::string::npos) << c.error().message;
  GgufWriter qwen2_moe = base_writer("qwen2");
  qwen2_moe.set_u32("qwen2.expert_count", 4);
  EXPECT_FALSE(config_of(qwen2_moe).ok());
}

TEST(LayerPlan, DefaultPlanAndStateSpecs) {
  auto dense = config_of(base_writer("llama"));
  ASSERT_TRUE(dense.ok()) << dense.error().message;
  ASSERT_EQ(dense->layers.size(), 2u);
  for (const LayerPlan& lp : dense->layers) {
    EXPECT_EQ(lp.mixer, MixerKind::kAttention);
    EXPECT_EQ(lp.ffn, FfnKind::kDense);
    EXPECT_EQ(lp.n_heads, 4);
    EXPECT_EQ(lp.n_kv_heads, 2);
    EXPECT_EQ(lp.head_dim, 16);
    EXPECT_EQ(lp.sliding_window, 0);
    EXPECT_EQ(lp.kv_shared_with, -1);
  }
  const std::vector<LayerStateSpec> specs = layer_state_specs(*dense);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[1].kind, LayerStateKind::kKv);
  EXPECT_EQ(specs[1].n_kv_heads, 2);
  EXPECT_EQ(specs[1].head_dim, 16);

  GgufWriter w = base_writer("qwen3moe");
  w.set_u32("qwen3moe.expert_count", 8);
  w.set_u32("qwen3moe.expert_used_count", 2);
  w.set_u32("qwen3moe.expert_feed_forward_length", 32);
  auto moe = config_of(w);
  ASSERT_TRUE(moe.ok()) << moe.error().message;
  EXPECT_EQ(moe->layer(1).ffn, FfnKind::kMoe);
  EXPECT_STREQ(ffn_kind_name(moe->layer(1).ffn), "moe");
  EXPECT_STREQ(mixer_kind_name(moe->layer(0).mixer), "attention");
}

TEST(LayerPlan, BadPlansNameTheLayerAndKey) {
  auto base = config_of(base_writer("llama"));
  ASSERT_TRUE(base.ok()) << base.error().message;
  auto expect_error = [](ModelConfig c, const char* needle) {
    Status st = finish_layer_plan(c);
    ASSERT_FALSE(st.ok()) << needle;
    EXPECT_NE(st.error().message.find(needle), std::string::npos) << st.error().message;
  };
  {
    ModelConfig c = *base;
    c.layers.pop_back();
    expect_error(c, "block_count");
  }
  {
    ModelConfig c = *base;
    c.layers[1].n_kv_heads = 3;  // 4 heads do not divide into 3 kv heads
    expect_error(c, "head_count_kv");
  }
  {
    ModelConfig c = *base;
    c.layers[1].ffn = FfnKind::kMoe;  // no experts in the file
    expect_error(c, "expert_count");
  }
  {
    ModelConfig c = *base;
    c.layers[0].kv_shared_with = 1;  // must share an earlier layer
    expect_error(c, "earlier attention layer");
  }
  {
    ModelConfig c = *base;
    c.layers[1].kv_shared_with = 0;
    c.layers[1].head_dim = 32;
    c.layers[1].n_heads = 2;
    expect_error(c, "differ");
  }
  {
    ModelConfig c = *base;
    c.layers[1].head_dim = 8;  // below rope.dimension_count (16)
    expect_error(c, "rope.dimension_count");
  }
  {
    ModelConfig c = *base;
    c.layers[1].kv_shared_with = 0;
    ASSERT_TRUE(finish_layer_plan(c).ok());
    const std::vector<LayerStateSpec> specs = layer_state_specs(c);
    EXPECT_EQ(specs[1].kind, LayerStateKind::kSharedKv);
    EXPECT_EQ(specs[1].shared_with, 0);
  }
}

// A qwen35-family file's metadata (4 layers, the last full attention), without the keys in `omit`.
GgufWriter qwen35_writer(const std::string& arch, const std::vector<std::string>& omit = {}) {
  GgufWriter w;
  auto u32 = [&](const std::string& key, uint32_t v) {
    if (std::find(omit.begin(), omit.end(), key) == omit.end()) w.set_u32(arch + "." + key, v);
  };
  w.set_string("general.architecture", arch);
  u32("embedding_length", 64);
  u32("block_count", 4);
  u32("attention.head_count", 4);
  u32("attention.head_count_kv", 2);
  u32("attention.key_length", 16);
  u32("attention.value_length", 16);
  u32("rope.dimension_count", 8);
  w.set_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
  u32("context_length", 256);
  u32("ssm.conv_kernel", 4);
  u32("ssm.state_size", 16);
  u32("ssm.group_count", 2);
  u32("ssm.time_step_rank", 4);
  u32("ssm.inner_size", 64);
  u32("full_attention_interval", 4);
  if (arch == "qwen35") {
    u32("feed_forward_length", 128);
  } else {
    u32("expert_count", 8);
    u32("expert_used_count", 2);
    u32("expert_feed_forward_length", 32);
    u32("expert_shared_feed_forward_length", 32);
  }
  if (arch != "qwen3next" && std::find(omit.begin(), omit.end(), "rope.dimension_sections") == omit.end()) {
    w.set_i32_array(arch + ".rope.dimension_sections", {2, 1, 1, 0});
  }
  w.add_tensor_bytes("token_embd.weight", GgmlType::kF32, {64, 32}, std::vector<uint8_t>(64 * 32 * 4, 0));
  return w;
}

TEST(LayerPlan, Qwen35FamilyHybridPlan) {
  for (const char* arch : {"qwen35", "qwen35moe", "qwen3next"}) {
    SCOPED_TRACE(arch);
    auto c = config_of(qwen35_writer(arch));
    ASSERT_TRUE(c.ok()) << c.error().message;
    ASSERT_EQ(c->layers.size(), 4u);
    for (int64_t l = 0; l < 4; ++l) {
      const LayerPlan& lp = c->layer(l);
      EXPECT_EQ(lp.mixer, l == 3 ? MixerKind::kAttention : MixerKind::kDeltaNet) << l;
      EXPECT_TRUE(lp.attn_output_gate);
      EXPECT_EQ(lp.ffn, std::string(arch) == "qwen35" ? FfnKind::kDense : FfnKind::kMoe);
      EXPECT_EQ(lp.shared_expert, std::string(arch) != "qwen35" ? SharedExpert::kGated : SharedExpert::kNone);
    }
    EXPECT_TRUE(c->ffn_norm_post_attention);
    EXPECT_EQ(c->delta_net.conv_channels(), 2 * 2 * 16 + 4 * 16);
    EXPECT_EQ(c->delta_net.grouped_heads, std::string(arch) == "qwen3next");
    EXPECT_EQ(c->delta_net.fused_ba, std::string(arch) == "qwen3next");
    const std::vector<LayerStateSpec> specs = layer_state_specs(*c);
    EXPECT_EQ(specs[0].kind, LayerStateKind::kRecurrent);
    EXPECT_EQ(specs[0].conv_floats, 3 * 128);
    EXPECT_EQ(specs[0].recurrent_floats, 4 * 16 * 16);
    EXPECT_EQ(specs[3].kind, LayerStateKind::kKv);
  }
}

TEST(LayerPlan, Qwen35FamilyBadMetadataNamesTheKey) {
  // A missing key, per architecture.
  for (const char* key : {"ssm.conv_kernel", "ssm.state_size", "ssm.group_count", "ssm.time_step_rank",
                          "ssm.inner_size", "full_attention_interval", "rope.dimension_sections",
                          "expert_shared_feed_forward_length", "expert_feed_forward_length"}) {
    auto c = config_of(qwen35_writer("qwen35moe", {key}));
    ASSERT_FALSE(c.ok()) << key;
    EXPECT_NE(c.error().message.find(key), std::string::npos) << key << ": " << c.error().message;
  }
  struct Case {
    const char* what;
    std::function<void(GgufWriter&)> mutate;
    const char* expect_in_message;
  };
  const std::vector<Case> cases = {
      {"value heads not a multiple of key heads", [](GgufWriter& w) { w.set_u32("qwen35moe.ssm.time_step_rank", 3); },
       "ssm.time_step_rank"},
      {"inner size", [](GgufWriter& w) { w.set_u32("qwen35moe.ssm.inner_size", 60); }, "ssm.inner_size"},
      {"interval beyond the layers", [](GgufWriter& w) { w.set_u32("qwen35moe.full_attention_interval", 5); },
       "full_attention_interval"},
      {"interval 0", [](GgufWriter& w) { w.set_u32("qwen35moe.full_attention_interval", 0); },
       "full_attention_interval"},
      {"sections of the wrong length",
       [](GgufWriter& w) {
         w.set_i32_array("qwen35moe.rope.dimension_sections", {2, 1, 1});
       },
       "rope.dimension_sections"},
      {"sections beyond the rotated pairs",
       [](GgufWriter& w) {
         w.set_i32_array("qwen35moe.rope.dimension_sections", {4, 4, 4, 0});
       },
       "rope.dimension_sections"},
      {"conv kernel", [](GgufWriter& w) { w.set_u32("qwen35moe.ssm.conv_kernel", 1); }, "ssm.conv_kernel"},
      {"heads that do not divide", [](GgufWriter& w) { w.set_u32("qwen35moe.attention.head_count_kv", 3); },
       "head_count_kv"},
  };
  for (const Case& bc : cases) {
    GgufWriter w = qwen35_writer("qwen35moe");
    bc.mutate(w);
    auto c = config_of(w);
    ASSERT_FALSE(c.ok()) << bc.what;
    EXPECT_NE(c.error().message.find(bc.expect_in_message), std::string::npos) << bc.what << ": " << c.error().message;
  }
  // MTP blocks after the main stack are left out of the plan; they cannot be the whole stack.
  {
    GgufWriter w = qwen35_writer("qwen35moe");
    w.set_u32("qwen35moe.block_count", 5);
    w.set_u32("qwen35moe.nextn_predict_layers", 1);
    auto c = config_of(w);
    ASSERT_TRUE(c.ok()) << c.error().message;
    EXPECT_EQ(c->n_layers, 4);
    EXPECT_EQ(c->layers.size(), 4u);
    w.set_u32("qwen35moe.nextn_predict_layers", 5);
    auto bad = config_of(w);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("nextn_predict_layers"), std::string::npos) << bad.error().message;
  }
  auto dense = config_of(qwen35_writer("qwen35", {"feed_forward_length"}));
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.error().message.find("feed_forward_length"), std::string::npos) << dense.error().message;
}

}  // namespace
}  // namespace sniper
