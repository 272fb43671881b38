// SPDX-License-Identifier: MIT
// Tensor roles by name: what streams (routed experts, dense FFN, attention projections) and what
// stays resident, including the hybrid models' shared experts and delta-net tensors.
#include "weights/tensor_roles.h"

#include <gtest/gtest.h>

namespace sniper {
namespace {

TEST(TensorRoles, ClassicNames) {
  EXPECT_EQ(tensor_role("token_embd.weight"), TensorRole::kEmbedding);
  EXPECT_EQ(tensor_role("output.weight"), TensorRole::kAlways);
  EXPECT_EQ(tensor_role("blk.3.attn_q.weight"), TensorRole::kAttention);
  EXPECT_EQ(tensor_role("blk.3.attn_output.weight"), TensorRole::kAttention);
  EXPECT_EQ(tensor_role("blk.3.attn_q_norm.weight"), TensorRole::kAlways);
  EXPECT_EQ(tensor_role("blk.0.ffn_gate.weight"), TensorRole::kDenseFfn);
  EXPECT_EQ(tensor_role("blk.0.ffn_down_exps.weight"), TensorRole::kExpert);
  EXPECT_EQ(tensor_role("blk.0.ffn_up.7.weight"), TensorRole::kExpert);
  EXPECT_EQ(tensor_role("blk.0.ffn_gate_inp.weight"), TensorRole::kAlways);
  EXPECT_EQ(tensor_layer("blk.12.ffn_up.weight"), 12);
  EXPECT_EQ(tensor_layer("output.weight"), -1);
}

TEST(TensorRoles, HybridModelsKeepSharedExpertsAndSmallDeltaNetTensorsResident) {
  for (const char* name : {"blk.0.ffn_gate_shexp.weight", "blk.0.ffn_up_shexp.weight", "blk.0.ffn_down_shexp.weight",
                           "blk.0.ffn_gate_inp_shexp.weight", "blk.0.ssm_conv1d.weight", "blk.0.ssm_dt.bias",
                           "blk.0.ssm_a", "blk.0.ssm_beta.weight", "blk.0.ssm_alpha.weight", "blk.0.ssm_ba.weight",
                           "blk.0.ssm_norm.weight", "blk.0.post_attention_norm.weight"}) {
    EXPECT_EQ(tensor_role(name), TensorRole::kAlways) << name;
  }
  // The delta-net's projections are mixer weights: they stream with attention's in a dense
  // hybrid under a small budget.
  for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_out.weight"}) {
    EXPECT_EQ(tensor_role(name), TensorRole::kAttention) << name;
  }
  // The hybrid models' full-attention layers and routed experts stream like any other.
  EXPECT_EQ(tensor_role("blk.3.attn_k.weight"), TensorRole::kAttention);
  EXPECT_EQ(tensor_role("blk.3.ffn_gate_exps.weight"), TensorRole::kExpert);
}

}  // namespace
}  // namespace sniper
