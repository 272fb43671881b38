// SPDX-License-Identifier: MIT
// Tensors that describe themselves (model/tensor_table.h, model/tensor_catalog.h): the blocks'
// tables claim every tensor of every fixture model with the shape the file has; the roles the
// memory plan streams by come from them for every family; a dense FFN whose gate and up are one
// fused ffn_gate_up tensor binds, streams as dense FFN and gives the split file's logits bit for
// bit (substring rules once left it "always resident" and the model did not load); and a tensor
// no table claims is listed by `sniper inspect`, warned about once at load, not loaded, and
// changes nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/model.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "gguf/writer.h"
#include "golden/shared_dir.h"
#include "model/tensor_catalog.h"
#include "model/tensor_names.h"
#include "test_temp_dir.h"

namespace sniper {
namespace {

std::vector<std::string> fixture_models() {
  std::vector<std::string> out;
  for (const char* dir : {"/models", "/models/iq"}) {
    for (const auto& e : std::filesystem::directory_iterator(shared_dir() + dir)) {
      if (e.path().extension() == ".gguf") out.push_back(e.path().string());
    }
  }
  return out;
}

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

TEST(TensorTables, EveryFixtureTensorIsClaimedWithItsShape) {
  int checked = 0;
  for (const std::string& path : fixture_models()) {
    SCOPED_TRACE(path);
    auto file = gguf_open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    auto config = load_model_config(*file);
    ASSERT_TRUE(config.ok()) << config.error().message;
    const TensorCatalog catalog(*config);
    EXPECT_TRUE(catalog.unclaimed(*file).empty()) << catalog.unclaimed(*file).front();
    for (const TensorUse& u : catalog.uses()) {
      const GgufTensorInfo* t = file->find_tensor(u.name);
      if (t == nullptr) {
        EXPECT_TRUE(u.optional || u.role == TensorRole::kUnread || (u.block >= config->n_layers)) << u.name;
        continue;
      }
      EXPECT_EQ(t->ne, u.shape) << u.name;
      if (u.type == TensorType::kF32) {
        EXPECT_EQ(t->type, GgmlType::kF32) << u.name;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

// The roles the plan lives by, per family (what the substring rules of weights/tensor_roles.cpp
// used to say, now each block's table).
TEST(TensorTables, RolesComeFromTheBlocksTables) {
  struct Want {
    const char* model;
    const char* tensor;
    TensorRole role;
  };
  const Want wants[] = {
      {"syn-qwen3-Q4_K_M", "token_embd.weight", TensorRole::kEmbedding},
      {"syn-qwen3-Q4_K_M", "output.weight", TensorRole::kAlways},
      {"syn-qwen3-Q4_K_M", "blk.1.attn_q.weight", TensorRole::kAttention},
      {"syn-qwen3-Q4_K_M", "blk.1.attn_output.weight", TensorRole::kAttention},
      {"syn-qwen3-Q4_K_M", "blk.1.attn_q_norm.weight", TensorRole::kAlways},
      {"syn-qwen3-Q4_K_M", "blk.0.ffn_gate.weight", TensorRole::kDenseFfn},
      {"syn-qwen3-Q4_K_M", "blk.0.ffn_norm.weight", TensorRole::kAlways},
      {"syn-qwen2", "blk.0.attn_q.bias", TensorRole::kAlways},
      {"syn-qwen3moe-Q4_K_M", "blk.0.ffn_down_exps.weight", TensorRole::kExpert},
      {"syn-qwen3moe-Q4_K_M", "blk.0.ffn_gate_inp.weight", TensorRole::kAlways},
      {"syn-mixtral-Q4_K_M", "blk.1.ffn_gate_exps.weight", TensorRole::kExpert},
      // Hybrids: shared experts and the delta-net's small tensors stay resident; its
      // projections stream like attention's.
      {"syn-qwen35moe-small", "blk.0.ffn_gate_inp_shexp.weight", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.ffn_up_shexp.weight", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.ssm_conv1d.weight", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.ssm_a", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.ssm_dt.bias", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.ssm_alpha.weight", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.ssm_norm.weight", TensorRole::kAlways},
      {"syn-qwen35moe-small", "blk.0.attn_qkv.weight", TensorRole::kAttention},
      {"syn-qwen35moe-small", "blk.0.attn_gate.weight", TensorRole::kAttention},
      {"syn-qwen35moe-small", "blk.0.ssm_out.weight", TensorRole::kAttention},
      {"syn-qwen35moe-small", "blk.0.post_attention_norm.weight", TensorRole::kAlways},
      {"syn-qwen3next-small", "blk.0.ssm_ba.weight", TensorRole::kAlways},
      {"syn-qwen35-small", "blk.0.ffn_up.weight", TensorRole::kDenseFfn},
      {"syn-gemma4moe-small", "blk.0.ffn_gate_up_exps.weight", TensorRole::kExpert},
      {"syn-gemma4moe-small", "blk.0.ffn_gate.weight", TensorRole::kDenseFfn},
      {"syn-gemma4e-small", "per_layer_token_embd.weight", TensorRole::kEmbedding},
  };
  for (const Want& w : wants) {
    SCOPED_TRACE(std::string(w.model) + " " + w.tensor);
    auto file = gguf_open(model_path(w.model));
    ASSERT_TRUE(file.ok());
    auto config = load_model_config(*file);
    ASSERT_TRUE(config.ok());
    const TensorCatalog catalog(*config);
    const TensorUse* u = catalog.find(w.tensor);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(u->role, w.role) << tensor_role_name(u->role);
  }
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

#ifdef SNIPER_CLI_PATH
// The standard output of a shell command (its stderr dropped).
std::string run_command(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}
#endif

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// Copies `path` to `out`, every tensor through `rewrite` (which adds what it wants to w and
// returns true when it took the tensor).
using Rewrite = std::function<bool(const GgufFile&, const GgufTensorInfo&, const std::vector<uint8_t>&, GgufWriter&)>;
void rewrite_file(const std::string& path, const std::string& out, const Rewrite& rewrite) {
  auto file = gguf_open(path);
  ASSERT_TRUE(file.ok());
  const std::vector<uint8_t> bytes = read_bytes(path);
  GgufWriter w;
  for (const auto& [key, value] : file->metadata()) {
    if (key != "general.alignment") w.set_value(key, value);
  }
  for (const GgufTensorInfo& t : file->tensors()) {
    if (rewrite(*file, t, bytes, w)) continue;
    w.add_tensor_bytes(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                       std::vector<uint8_t>(bytes.begin() + static_cast<long>(t.file_offset),
                                            bytes.begin() + static_cast<long>(t.file_offset + t.nbytes)));
  }
  ASSERT_TRUE(w.write(out).ok());
}

// The prompt's logits and a few decode steps'.
std::vector<float> logits(const std::string& path, const ModelLoadOptions& lo) {
  auto model = Model::load(path, lo);
  EXPECT_TRUE(model.ok()) << model.error().message;
  if (!model.ok()) return {};
  SessionOptions so;
  so.n_threads = 2;
  so.batch = 8;
  auto session = Session::create(**model, so);
  EXPECT_TRUE(session.ok());
  const std::vector<int32_t> ids = {1, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63};
  std::vector<float> all;
  EXPECT_TRUE((*session)->eval(ids, &all).ok());
  for (int32_t id : {7, 9, 11}) {
    const int32_t one[1] = {id};
    EXPECT_TRUE((*session)->eval(one).ok());
    all.insert(all.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
  }
  return all;
}

TEST(TensorTables, AFusedDenseGateUpBindsStreamsAndMatchesTheSplitFile) {
  // syn-llama-Q8_0 with each layer's ffn_gate and ffn_up joined into ffn_gate_up (the gate rows,
  // then the up rows: Q8_0 rows are independent blocks, so the products are the same).
  const std::string src = model_path("syn-llama-Q8_0");
  const test::TempDir dir("tensor-tables");
  const std::string fused = dir.file("fused_gate_up.gguf");
  rewrite_file(
      src, fused, [](const GgufFile& f, const GgufTensorInfo& t, const std::vector<uint8_t>& bytes, GgufWriter& w) {
        const std::string suffix = t.name.substr(t.name.find('.', 4) + 1);
        if (suffix == "ffn_up.weight") return true;  // joined with the gate
        if (suffix != "ffn_gate.weight") return false;
        const GgufTensorInfo* up = f.find_tensor(t.name.substr(0, t.name.size() - suffix.size()) + "ffn_up.weight");
        EXPECT_NE(up, nullptr);
        std::vector<uint8_t> both(bytes.begin() + static_cast<long>(t.file_offset),
                                  bytes.begin() + static_cast<long>(t.file_offset + t.nbytes));
        both.insert(both.end(), bytes.begin() + static_cast<long>(up->file_offset),
                    bytes.begin() + static_cast<long>(up->file_offset + up->nbytes));
        w.add_tensor_bytes(t.name.substr(0, t.name.size() - suffix.size()) + "ffn_gate_up.weight", t.type,
                           {t.ne[0], 2 * t.ne[1]}, std::move(both));
        return true;
      });
  auto file = gguf_open(fused);
  ASSERT_TRUE(file.ok());
  auto config = load_model_config(*file);
  ASSERT_TRUE(config.ok()) << config.error().message;
  EXPECT_TRUE(config->layer(0).ffn_fused_gate_up);
  const TensorCatalog catalog(*config);
  EXPECT_TRUE(catalog.unclaimed(*file).empty());
  const std::string gate_up = layer_tensor_name(1, "ffn_gate_up.weight");
  ASSERT_NE(catalog.find(gate_up), nullptr);
  EXPECT_EQ(catalog.find(gate_up)->role, TensorRole::kDenseFfn);
  // Under a budget that streams the dense FFN, the fused tensor streams.
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.force_stream = true;
  req.batch = 8;
  req.n_ctx = std::min<int64_t>(config->n_ctx_train, 4096);
  auto plan = make_plan(*file, *config, req);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(plan->stream_dense_ffn);
  int streamed = 0;
  for (int64_t l = 0; l < config->n_layers; ++l)
    streamed += plan->streamed_tensors.count(layer_tensor_name(l, "ffn_gate_up.weight"));
  EXPECT_GE(streamed, 1);
  // The logits: the split file's, resident and streamed.
  ModelLoadOptions resident;
  resident.batch = 8;
  const std::vector<float> want = logits(src, resident);
  EXPECT_EQ(logits(fused, resident), want);
  ModelLoadOptions stream = resident;
  stream.residency = ResidencyMode::kStream;
  stream.mem_bytes = plan->min_budget_bytes;
  EXPECT_EQ(logits(fused, stream), want);
  std::filesystem::remove(fused);
}

TEST(TensorTables, AnUnclaimedTensorIsListedNotLoadedAndChangesNothing) {
  const std::string src = model_path("syn-qwen3-Q4_K_M");
  const test::TempDir dir("tensor-tables");
  const std::string extra = dir.file("unclaimed.gguf");
  rewrite_file(src, extra, [](const GgufFile&, const GgufTensorInfo& t, const std::vector<uint8_t>&, GgufWriter& w) {
    if (t.name == "output_norm.weight") {
      w.add_tensor_bytes("blk.0.mystery.weight", GgmlType::kF32, {16}, std::vector<uint8_t>(64, 1));
      w.add_tensor_bytes("extra_table.weight", GgmlType::kF32, {4, 4}, std::vector<uint8_t>(64, 2));
    }
    return false;
  });
  auto file = gguf_open(extra);
  ASSERT_TRUE(file.ok());
  auto config = load_model_config(*file);
  ASSERT_TRUE(config.ok());
  const TensorCatalog catalog(*config);
  EXPECT_EQ(catalog.unclaimed(*file), (std::vector<std::string>{"blk.0.mystery.weight", "extra_table.weight"}));
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.n_ctx = 512;
  auto plan = make_plan(*file, *config, req);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->unloaded_tensors.count("blk.0.mystery.weight"), 1u);
  EXPECT_EQ(plan->unloaded_tensors.count("extra_table.weight"), 1u);
  ModelLoadOptions lo;
  lo.batch = 8;
  // Loading warns once, naming the tensors.
  testing::internal::CaptureStderr();
  const std::vector<float> got = logits(extra, lo);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "that no block reads"), 1u) << err;
  EXPECT_NE(err.find("2 tensors that no block reads"), std::string::npos) << err;
  EXPECT_NE(err.find("blk.0.mystery.weight, extra_table.weight"), std::string::npos) << err;
  EXPECT_EQ(got, logits(src, lo));
  // A file every table claims loads without the warning.
  testing::internal::CaptureStderr();
  EXPECT_FALSE(logits(src, lo).empty());
  EXPECT_EQ(count(testing::internal::GetCapturedStderr(), "that no block reads"), 0u);
#ifdef SNIPER_CLI_PATH
  // sniper inspect lists them, with the role column saying so; a fully claimed file lists none.
  const std::string listed = run_command(std::string(SNIPER_CLI_PATH) + " inspect --tensors " + extra);
  EXPECT_NE(listed.find("unclaimed tensors (no block's table reads them; not loaded): 2\n  blk.0.mystery.weight\n"
                        "  extra_table.weight\n"),
            std::string::npos)
      << listed;
  EXPECT_EQ(count(listed, " unclaimed\n"), 2u) << listed;  // the --tensors role column
  const std::string clean = run_command(std::string(SNIPER_CLI_PATH) + " inspect " + src);
  EXPECT_NE(clean.find("unclaimed tensors (no block's table reads them; not loaded): 0\n"), std::string::npos) << clean;
#endif
  std::filesystem::remove(extra);
}

}  // namespace
}  // namespace sniper
