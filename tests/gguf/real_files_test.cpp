// SPDX-License-Identifier: MIT
// Reads every GGUF in $SNIPER_SHARED_DIR/models and $SNIPER_SHARED_DIR/tokenizer (files made by
// llama.cpp's gguf-py) and checks counts and known values from their headers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gguf/reader.h"

namespace sniper {
namespace {

namespace fs = std::filesystem;

struct Known {
  uint64_t n_tensors;
  uint64_t n_kv;
  const char* architecture;  // nullptr: vocab-only file without general.architecture check
  uint64_t n_tokens;
};

// Counts read from the files' headers with an independent script.
const std::map<std::string, Known>& known_files() {
  static const std::map<std::string, Known> kKnown = {
      {"stories260K.gguf", {48, 19, "llama", 512}},
      {"stories260K-Q8_0.gguf", {48, 21, "llama", 512}},
      {"syn-llama.gguf", {21, 19, "llama", 512}},
      {"syn-llama-BF16.gguf", {21, 20, "llama", 512}},
      {"syn-llama-F16.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q2_K.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q3_K_M.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q4_0.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q4_K_M.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q5_K_M.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q6_K.gguf", {21, 20, "llama", 512}},
      {"syn-llama-Q8_0.gguf", {21, 20, "llama", 512}},
      {"syn-mixtral-Q4_K_M.gguf", {23, 22, "llama", 512}},
      {"syn-qwen2.gguf", {27, 18, "qwen2", 512}},
      {"syn-qwen2-Q8_0.gguf", {27, 19, "qwen2", 512}},
      {"syn-qwen3.gguf", {25, 20, "qwen3", 512}},
      {"syn-qwen3-Q4_K_M.gguf", {25, 21, "qwen3", 512}},
      {"syn-qwen3moe-Q4_K_M.gguf", {39, 24, "qwen3moe", 512}},
      {"syn-qwen3moe-Q6_K.gguf", {39, 24, "qwen3moe", 512}},
      {"syn-qwen3moe-Q8_0.gguf", {39, 24, "qwen3moe", 512}},
      {"ggml-vocab-deepseek-llm.gguf", {0, 23, nullptr, 102400}},
      {"ggml-vocab-gpt-2.gguf", {0, 16, nullptr, 50257}},
      {"ggml-vocab-llama-bpe.gguf", {0, 16, nullptr, 128256}},
      {"ggml-vocab-llama-spm.gguf", {0, 22, nullptr, 32000}},
      {"ggml-vocab-phi-3.gguf", {0, 26, nullptr, 32064}},
      {"ggml-vocab-qwen2.gguf", {0, 16, nullptr, 151936}},
  };
  return kKnown;
}

std::string shared_dir() {
  const char* dir = std::getenv("SNIPER_SHARED_DIR");
  return dir != nullptr ? dir : "";
}

std::vector<std::string> all_gguf_files() {
  std::vector<std::string> out;
  for (const char* sub : {"models", "tokenizer"}) {
    fs::path dir = fs::path(shared_dir()) / sub;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.is_regular_file() && entry.path().extension() == ".gguf") out.push_back(entry.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::vector<uint8_t> bytes(fs::file_size(path));
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(f.good()) << path;
  return bytes;
}

TEST(GgufRealFiles, EveryFileParsesWithKnownCounts) {
  if (shared_dir().empty()) GTEST_SKIP() << "SNIPER_SHARED_DIR is not set";
  std::vector<std::string> files = all_gguf_files();
  size_t n_known = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto file = gguf_open(path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->version, 3u);
    EXPECT_EQ(file->alignment, 32u);
    EXPECT_EQ(file->file_size, fs::file_size(path));
    for (const GgufTensorInfo& t : file->tensors()) {
      EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
      EXPECT_LE(t.file_offset + t.nbytes, file->file_size) << t.name;
      EXPECT_EQ(t.nbytes, t.row_bytes() * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3])) << t.name;
    }
    auto tokens = file->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok()) << tokens.error().message;
    std::string name = fs::path(path).filename().string();
    auto it = known_files().find(name);
    if (it == known_files().end()) continue;
    ++n_known;
    const Known& k = it->second;
    EXPECT_EQ(file->tensors().size(), k.n_tensors);
    EXPECT_EQ(file->metadata().size(), k.n_kv);
    EXPECT_EQ((*tokens)->size(), k.n_tokens);
    if (k.architecture != nullptr) {
      EXPECT_EQ(*file->get_string("general.architecture"), k.architecture);
    }
  }
  EXPECT_EQ(n_known, known_files().size()) << "some known files are missing from " << shared_dir();
}

// The file reader (chunked pread) and the memory parser must agree. Models plus one vocab file
// whose metadata spans several read chunks (the other vocab files only add run time).
TEST(GgufRealFiles, OpenAndParseAgree) {
  if (shared_dir().empty()) GTEST_SKIP() << "SNIPER_SHARED_DIR is not set";
  for (const std::string& path : all_gguf_files()) {
    bool vocab = path.find("/tokenizer/") != std::string::npos;
    if (vocab && path.find("ggml-vocab-gpt-2.gguf") == std::string::npos) continue;
    SCOPED_TRACE(path);
    std::vector<uint8_t> bytes = read_file_bytes(path);
    auto parsed = gguf_parse(bytes.data(), bytes.size());
    auto opened = gguf_open(path);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    EXPECT_EQ(parsed->data_offset, opened->data_offset);
    EXPECT_TRUE(parsed->metadata() == opened->metadata());
    ASSERT_EQ(parsed->tensors().size(), opened->tensors().size());
    for (size_t i = 0; i < parsed->tensors().size(); ++i) {
      EXPECT_EQ(parsed->tensors()[i].name, opened->tensors()[i].name);
      EXPECT_EQ(parsed->tensors()[i].file_offset, opened->tensors()[i].file_offset);
    }
  }
}

TEST(GgufRealFiles, Stories260KValues) {
  if (shared_dir().empty()) GTEST_SKIP() << "SNIPER_SHARED_DIR is not set";
  auto f = gguf_open(shared_dir() + "/models/stories260K.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(*f->get_int("llama.block_count"), 5);
  EXPECT_EQ(*f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*f->get_int("llama.feed_forward_length"), 172);
  EXPECT_EQ(*f->get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(*f->get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*f->get_int("tokenizer.ggml.padding_token_id"), 4294967295ll);
  EXPECT_FLOAT_EQ(static_cast<float>(*f->get_float("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(*f->get_string("tokenizer.ggml.model"), "llama");
  const auto& tokens = **f->get_string_array("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens[0], "<unk>");
  EXPECT_EQ(tokens[1], "<s>");
  EXPECT_EQ(tokens[2], "</s>");
  EXPECT_EQ((*f->get_float_array("tokenizer.ggml.scores"))->size(), 512u);
  const auto& types = **f->get_int_array("tokenizer.ggml.token_type");
  EXPECT_EQ(types[0], 2);
  EXPECT_EQ(types[1], 3);
  const GgufTensorInfo* embd = f->find_tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(embd->type, GgmlType::kF32);
  EXPECT_EQ(embd->n_dims, 2);
  EXPECT_EQ(embd->ne[0], 64);
  EXPECT_EQ(embd->ne[1], 512);
  EXPECT_EQ(embd->offset, 0u);
  EXPECT_EQ(embd->nbytes, 64u * 512u * 4u);
  EXPECT_EQ(embd->file_offset, f->data_offset);
  EXPECT_EQ(f->data_offset, 14176u);  // the tensor table ends at 14152, padded to 32
}

TEST(GgufRealFiles, QuantizedAndMoeShapes) {
  if (shared_dir().empty()) GTEST_SKIP() << "SNIPER_SHARED_DIR is not set";
  auto q8 = gguf_open(shared_dir() + "/models/stories260K-Q8_0.gguf");
  ASSERT_TRUE(q8.ok()) << q8.error().message;
  const GgufTensorInfo* out = q8->find_tensor("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->type, GgmlType::kQ8_0);
  EXPECT_EQ(out->nbytes, 64u / 32u * 34u * 512u);
  EXPECT_EQ(*q8->get_int("general.file_type"), 7);

  auto moe = gguf_open(shared_dir() + "/models/syn-qwen3moe-Q4_K_M.gguf");
  ASSERT_TRUE(moe.ok()) << moe.error().message;
  EXPECT_EQ(*moe->get_int("qwen3moe.expert_count"), 16);
  int n_3d = 0;
  for (const GgufTensorInfo& t : moe->tensors()) {
    if (t.n_dims == 3) {
      ++n_3d;
      EXPECT_EQ(t.ne[2], 16) << t.name;
    }
  }
  EXPECT_GT(n_3d, 0);
}

}  // namespace
}  // namespace sniper

namespace sniper {
namespace {

// The i-quant / ternary files (models/iq): every tensor's byte size follows from the type table
// (block sizes of the new types), and a file cut inside its last tensor is an error at load that
// names that tensor, never a short read later.
TEST(GgufRealFiles, IqFilesParseAndTruncatedTensorsAreErrors) {
  const fs::path dir = fs::path(shared_dir()) / "models" / "iq";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no " << dir;
  int n_files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    ++n_files;
    SCOPED_TRACE(entry.path().string());
    std::vector<uint8_t> bytes = read_file_bytes(entry.path().string());
    auto file = gguf_parse(bytes.data(), bytes.size());
    ASSERT_TRUE(file.ok()) << file.error().message;
    const GgufTensorInfo* last = nullptr;
    for (const GgufTensorInfo& t : file->tensors()) {
      EXPECT_EQ(t.nbytes, t.row_bytes() * static_cast<uint64_t>(t.ne[1] * t.ne[2] * t.ne[3])) << t.name;
      if (last == nullptr || t.file_offset > last->file_offset) last = &t;
    }
    ASSERT_NE(last, nullptr);
    const size_t cut = static_cast<size_t>(last->file_offset + last->nbytes - 1);
    auto truncated = gguf_parse(bytes.data(), cut);
    ASSERT_FALSE(truncated.ok());
    EXPECT_NE(truncated.error().message.find(last->name), std::string::npos) << truncated.error().message;
  }
  EXPECT_EQ(n_files, 14);
}

}  // namespace
}  // namespace sniper
