// SPDX-License-Identifier: MIT
// Finding the models `sniper serve` offers: --models DIR (file stems, split models listed once
// by their first part, duplicates and empty directories refused), --model NAME=PATH, and the
// --keep-alive / --load-timeout durations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "server/model_sources.h"
#include "server/server_options.h"

namespace sniper::server {
namespace {

namespace fs = std::filesystem;

class ModelSources : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/sniper_model_sources_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void touch(const std::string& name, size_t bytes = 10) {
    std::ofstream f(dir_ + "/" + name, std::ios::binary);
    f << std::string(bytes, 'x');
  }
  std::string dir_;
};

TEST(SplitStem, ParsesLlamaGgufSplitNames) {
  std::string base;
  int part = 0, n = 0;
  ASSERT_TRUE(parse_split_stem("Qwen3.5-35B-A3B-Q4_K_M-00002-of-00003", &base, &part, &n));
  EXPECT_EQ(base, "Qwen3.5-35B-A3B-Q4_K_M");
  EXPECT_EQ(part, 2);
  EXPECT_EQ(n, 3);
  EXPECT_FALSE(parse_split_stem("model", &base, &part, &n));
  EXPECT_FALSE(parse_split_stem("-00001-of-00003", &base, &part, &n));   // no base name
  EXPECT_FALSE(parse_split_stem("m-00004-of-00003", &base, &part, &n));  // part past the count
  EXPECT_FALSE(parse_split_stem("m-00000-of-00003", &base, &part, &n));
  EXPECT_FALSE(parse_split_stem("m-0001-of-00003", &base, &part, &n));
  EXPECT_FALSE(parse_split_stem("m-000a1-of-00003", &base, &part, &n));
  EXPECT_FALSE(parse_split_stem("m_00001-of-00003", &base, &part, &n));
}

TEST_F(ModelSources, ScansADirectory) {
  touch("gemma.gguf", 100);
  touch("big-00001-of-00002.gguf", 30);
  touch("big-00002-of-00002.gguf", 40);
  touch("notes.txt");
  touch("small.GGUF.part");
  fs::create_directories(dir_ + "/sub.gguf");  // a directory is not a model
  auto found = scan_models_dir(dir_);
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found->size(), 2u);
  EXPECT_EQ((*found)[0].name, "big");
  EXPECT_EQ((*found)[0].path, dir_ + "/big-00001-of-00002.gguf");
  EXPECT_EQ((*found)[0].size_bytes, 70u);
  EXPECT_EQ((*found)[1].name, "gemma");
  EXPECT_EQ((*found)[1].size_bytes, 100u);
}

TEST_F(ModelSources, RefusesEmptyMissingAndAmbiguousDirectories) {
  auto empty = scan_models_dir(dir_);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("no *.gguf"), std::string::npos);
  auto missing = scan_models_dir(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("cannot read"), std::string::npos);
  touch("m.gguf");
  touch("m-00001-of-00002.gguf");
  auto dup = scan_models_dir(dir_);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("'m'"), std::string::npos) << dup.error().message;
}

TEST_F(ModelSources, ParsesModelSpecs) {
  touch("x.gguf", 5);
  touch("s-00001-of-00002.gguf", 5);
  touch("s-00002-of-00002.gguf", 6);
  auto named = parse_model_spec("fast=" + dir_ + "/x.gguf");
  ASSERT_TRUE(named.ok()) << named.error().message;
  EXPECT_EQ(named->name, "fast");
  EXPECT_EQ(named->size_bytes, 5u);
  auto bare = parse_model_spec(dir_ + "/x.gguf");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->name, "x");
  auto split = parse_model_spec(dir_ + "/s-00001-of-00002.gguf");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->name, "s");
  EXPECT_EQ(split->size_bytes, 11u);
  touch("a=b.gguf");
  auto eq = parse_model_spec(dir_ + "/a=b.gguf");  // an existing path with '=' is a path
  ASSERT_TRUE(eq.ok()) << eq.error().message;
  EXPECT_EQ(eq->name, "a=b");
  EXPECT_FALSE(parse_model_spec("=" + dir_ + "/x.gguf").ok());
  EXPECT_FALSE(parse_model_spec("a b=" + dir_ + "/x.gguf").ok());
  EXPECT_FALSE(parse_model_spec("a/b=" + dir_ + "/x.gguf").ok());
  EXPECT_FALSE(parse_model_spec("fast=").ok());
  auto missing = parse_model_spec("fast=" + dir_ + "/none.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("none.gguf"), std::string::npos);
}

TEST(ModelSourceNames, MustBeUniqueAndPresent) {
  EXPECT_TRUE(check_unique_names({{"a", "/x", 0}, {"b", "/y", 0}}).ok());
  Status dup = check_unique_names({{"a", "/x", 0}, {"a", "/y", 0}});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.error().message.find("'a'"), std::string::npos);
  EXPECT_FALSE(check_unique_names({}).ok());
}

TEST(Duration, ParsesKeepAliveValues) {
  EXPECT_EQ(*parse_duration_s("-1", "--keep-alive"), -1);
  EXPECT_EQ(*parse_duration_s("0", "--keep-alive"), 0);
  EXPECT_EQ(*parse_duration_s("30", "--keep-alive"), 30);
  EXPECT_EQ(*parse_duration_s("2.5s", "--keep-alive"), 2.5);
  EXPECT_EQ(*parse_duration_s("5m", "--keep-alive"), 300);
  EXPECT_EQ(*parse_duration_s("1h", "--keep-alive"), 3600);
  EXPECT_DOUBLE_EQ(*parse_duration_s("250ms", "--keep-alive"), 0.25);
  for (const char* bad : {"", "-2", "5x", "m", "1e999", "nan", "-0.5", "5 m"}) {
    auto r = parse_duration_s(bad, "--keep-alive");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("--keep-alive"), std::string::npos);
  }
}

}  // namespace
}  // namespace sniper::server
