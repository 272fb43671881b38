// SPDX-License-Identifier: MIT
// gemma4's sliding window past its end, in every chunk shape: the fixtures' 16-token window is
// shorter than the 56 compared positions, and prefill chunks of 1, 5 and 16 tokens split the
// 24-token prompt differently from the one-batch golden test. Every row stays within the
// reference bounds. Rewinding: a sliding ring (768 cells, llama.cpp's SWA cache size) that has
// not wrapped rewinds to the same bits as never having gone further; one that has wrapped
// cannot be rewound (the session starts over).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model.h"
#include "engine/session.h"
#include "gguf/reader.h"
#include "gguf/writer.h"
#include "golden/shared_dir.h"
#include "kernels/ops.h"

namespace sniper {
namespace {

std::vector<float> read_f32(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(f.good()) << path;
  std::vector<float> v(static_cast<size_t>(f.tellg()) / sizeof(float));
  f.seekg(0);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct Fixture {
  std::vector<int32_t> ids;  // prompt then gen ids
  size_t n_prompt = 0;
  std::vector<float> logits;    // the reference's rows for every id
  std::vector<double> margins;  // their top-1 margins
};

Fixture load_fixture(const std::string& name) {
  const std::string dir = shared_dir() + "/reference/" + name;
  Fixture f;
  f.ids = read_json(dir + "/prompt_ids.json").get<std::vector<int32_t>>();
  f.n_prompt = f.ids.size();
  const auto gen = read_json(dir + "/gen_ids.json").get<std::vector<int32_t>>();
  f.ids.insert(f.ids.end(), gen.begin(), gen.end());
  f.logits = read_f32(dir + "/prompt_logits.f32");
  const std::vector<float> g = read_f32(dir + "/gen_logits.f32");
  f.logits.insert(f.logits.end(), g.begin(), g.end());
  const nlohmann::json meta = read_json(dir + "/meta.json");
  for (const auto& m : meta["top1_margin"]["prompt_rows"]) f.margins.push_back(m.get<double>());
  for (const auto& m : meta["top1_margin"]["gen_rows"]) f.margins.push_back(m.get<double>());
  return f;
}

class Gemma4WindowTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Gemma4WindowTest, EveryChunkShapeMatchesTheReferencePastTheWindow) {
  const Fixture f = load_fixture(GetParam());
  auto model = Model::load(shared_dir() + "/models/" + GetParam() + ".gguf", {});
  ASSERT_TRUE(model.ok()) << model.error().message;
  const size_t n_vocab = static_cast<size_t>((*model)->config().vocab_size);
  ASSERT_EQ(f.logits.size(), f.ids.size() * n_vocab);
  for (int64_t batch : {1, 5, 16}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    SessionOptions so;
    so.n_ctx = 512;
    so.n_threads = 2;
    so.batch = batch;
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok()) << session.error().message;
    // The prompt as prefill chunks of `batch`, then the generated ids one by one (teacher-forced).
    std::vector<float> ours;
    ASSERT_TRUE((*session)->eval(std::span<const int32_t>(f.ids.data(), f.n_prompt), &ours).ok());
    for (size_t i = f.n_prompt; i < f.ids.size(); ++i) {
      ASSERT_TRUE((*session)->eval(std::span<const int32_t>(&f.ids[i], 1)).ok());
      ours.insert(ours.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
    }
    ASSERT_EQ(ours.size(), f.logits.size());
    double worst = 0;
    for (size_t r = 0; r < f.ids.size(); ++r) {
      const float* a = ours.data() + r * n_vocab;
      const float* b = f.logits.data() + r * n_vocab;
      double num = 0, den = 0;
      for (size_t i = 0; i < n_vocab; ++i) {
        num += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
        den += static_cast<double>(b[i]) * b[i];
      }
      worst = std::max(worst, num / den);
      if (f.margins[r] >= 0.03) {
        EXPECT_EQ(argmax(a, static_cast<int64_t>(n_vocab)), argmax(b, static_cast<int64_t>(n_vocab))) << "row " << r;
      }
    }
    EXPECT_LE(worst, 1e-4);
  }
}

// The fixture with gemma4.context_length raised to 1024 (a copy in a temporary folder): its
// 512-token context never wraps the 768-cell rings.
std::string longer_context_copy(const std::string& name) {
  const std::string src = shared_dir() + "/models/" + name + ".gguf";
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("sniper-gemma4-ctx1024-" + name + "-" + std::to_string(getpid()) + ".gguf"))
                              .string();
  auto file = gguf_open(src);
  EXPECT_TRUE(file.ok());
  if (!file.ok()) return out;
  std::ifstream in(src, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  GgufWriter w;
  for (const auto& [key, value] : file->metadata()) {
    if (key != "general.alignment") w.set_value(key, value);
  }
  w.set_u32("gemma4.context_length", 1024);
  for (const GgufTensorInfo& t : file->tensors()) {
    w.add_tensor_bytes(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                       std::vector<uint8_t>(bytes.begin() + static_cast<long>(t.file_offset),
                                            bytes.begin() + static_cast<long>(t.file_offset + t.nbytes)));
  }
  EXPECT_TRUE(w.write(out).ok());
  return out;
}

TEST_P(Gemma4WindowTest, RewindsWhileTheRingHasNotWrapped) {
  const Fixture f = load_fixture(GetParam());
  const std::string path = longer_context_copy(GetParam());
  struct Remove {
    std::string p;
    ~Remove() { std::filesystem::remove(p); }
  } remove{path};
  ModelLoadOptions lo;
  lo.n_ctx = 1024;
  auto model = Model::load(path, lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  SessionOptions so;
  so.n_ctx = 1024;  // more than the rings' 768 cells, so that they wrap below
  so.n_threads = 2;
  so.batch = 64;
  auto a = Session::create(**model, so);
  auto b = Session::create(**model, so);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  const std::span<const int32_t> ids(f.ids);
  // a: 12 tokens, back to 10, then 10..24; b: 10 tokens, then 10..24.
  ASSERT_TRUE((*a)->eval(ids.subspan(0, 12)).ok());
  EXPECT_EQ((*a)->truncate(10), 10);
  std::vector<float> la, lb;
  ASSERT_TRUE((*a)->eval(ids.subspan(10, 14), &la).ok());
  ASSERT_TRUE((*b)->eval(ids.subspan(0, 10)).ok());
  ASSERT_TRUE((*b)->eval(ids.subspan(10, 14), &lb).ok());
  EXPECT_TRUE(la == lb) << "a rewound ring gives other logits than never going further";
  // 784 tokens wrapped the 768-cell rings: the state cannot go back to 30.
  std::vector<int32_t> more(760);
  for (size_t i = 0; i < more.size(); ++i) more[i] = f.ids[i % f.ids.size()];
  ASSERT_TRUE((*a)->eval(more).ok());
  ASSERT_EQ((*a)->n_past(), 784);
  EXPECT_EQ((*a)->truncate(30), 0);
  EXPECT_EQ((*a)->n_past(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Gemma4WindowTest, ::testing::Values("syn-gemma4moe-small", "syn-gemma4e-small"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& ch : s) ch = (ch == '-') ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace sniper
