// SPDX-License-Identifier: MIT
// Split GGUF models (llama.cpp's gguf-split layout): a model written as parts by
// gguf_write_split loads as one model and gives bit-identical logits to the unsplit file,
// resident, mmap and streamed (expert cache / dense FFN streaming reading from whichever part
// holds the bytes), with both I/O backends; any part may be named; a missing part, a part of
// another set and a renamed part are clear errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "base/split_offset.h"
#include "engine/model.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "gguf/split.h"
#include "gguf/split_writer.h"
#include "golden/shared_dir.h"
#include "test_temp_dir.h"

namespace sniper {
namespace {

namespace fs = std::filesystem;

const std::vector<int32_t> kIds = {1, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63};

Result<std::vector<float>> run(const std::string& path, const ModelLoadOptions& lo) {
  auto model = Model::load(path, lo);
  if (!model.ok()) return model.error();
  SessionOptions so;
  so.n_threads = 2;
  so.batch = 8;
  auto session = Session::create(**model, so);
  if (!session.ok()) return session.error();
  std::vector<float> all;
  SNIPER_TRY((*session)->eval(kIds, &all));
  for (int i = 0; i < 4; ++i) {
    const int32_t one[1] = {kIds[static_cast<size_t>(i)]};
    SNIPER_TRY((*session)->eval(one));
    all.insert(all.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
  }
  return all;
}

uint64_t min_stream_budget(const std::string& path) {
  auto file = gguf_open_model(path);
  EXPECT_TRUE(file.ok()) << file.error().message;
  auto config = load_model_config(*file);
  EXPECT_TRUE(config.ok());
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.force_stream = true;
  req.n_ctx = std::min<int64_t>(config->n_ctx_train, 4096);
  req.batch = 8;
  auto plan = make_plan(*file, *config, req);
  EXPECT_TRUE(plan.ok());
  return plan->min_budget_bytes;
}

using test::TempDir;

// Splits `src` into about `n_parts` parts under dir; returns the part paths.
std::vector<std::string> split_model(const std::string& src, const std::string& prefix, int n_parts) {
  auto model = gguf_open_model(src);
  EXPECT_TRUE(model.ok()) << model.error().message;
  SplitLimits limits;
  limits.max_part_tensors = (model->tensors().size() + static_cast<size_t>(n_parts) - 1) / static_cast<size_t>(n_parts);
  auto paths = gguf_write_split(*model, prefix, limits);
  EXPECT_TRUE(paths.ok()) << paths.error().message;
  return paths.ok() ? *paths : std::vector<std::string>{};
}

class SplitModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SplitModelTest, SameLogitsAsUnsplitResidentMmapAndStreamed) {
  const std::string src = shared_dir() + "/models/" + GetParam() + ".gguf";
  TempDir dir;
  const std::vector<std::string> parts = split_model(src, dir.path() + "/m", 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(fs::path(parts[0]).filename(), "m-00001-of-00003.gguf");

  // The reader presents one tensor set whose tensors live in all three files.
  auto whole = gguf_open(src);
  auto split = gguf_open_model(parts[0]);
  ASSERT_TRUE(whole.ok() && split.ok()) << (split.ok() ? "" : split.error().message);
  EXPECT_EQ(split->parts.size(), 3u);
  EXPECT_EQ(split->tensors().size(), whole->tensors().size());
  std::set<uint32_t> used;
  for (const GgufTensorInfo& t : split->tensors()) used.insert(part_of(t.file_offset));
  EXPECT_EQ(used.size(), 3u);

  ModelLoadOptions resident;
  resident.residency = ResidencyMode::kResident;
  resident.batch = 8;
  auto expected = run(src, resident);
  ASSERT_TRUE(expected.ok()) << expected.error().message;

  auto got = run(parts[0], resident);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, *expected) << "resident";

  ModelLoadOptions mmap = resident;
  mmap.residency = ResidencyMode::kMmap;
  got = run(parts[1], mmap);  // any part names the model
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, *expected) << "mmap";

  for (IoBackend backend : {IoBackend::kPread, IoBackend::kAuto}) {
    ModelLoadOptions streamed;
    streamed.residency = ResidencyMode::kStream;
    streamed.mem_bytes = min_stream_budget(parts[0]);
    streamed.batch = 8;
    streamed.io_backend = backend;
    got = run(parts[2], streamed);
    ASSERT_TRUE(got.ok()) << got.error().message;
    EXPECT_EQ(*got, *expected) << "streamed, " << io_backend_name(backend);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SplitModelTest,
                         ::testing::Values("syn-llama-Q4_K_M",      // dense: FFN layer streaming
                                           "syn-mixtral-Q4_K_M"));  // MoE: the expert cache

TEST(SplitModel, MissingMismatchedAndRenamedPartsAreClearErrors) {
  const std::string src = shared_dir() + "/models/syn-llama-Q4_K_M.gguf";
  TempDir dir;
  const auto parts = split_model(src, dir.path() + "/a", 3);
  ASSERT_EQ(parts.size(), 3u);

  // A missing part.
  fs::rename(parts[1], parts[1] + ".away");
  auto missing = gguf_open_model(parts[0]);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("part 2 of 3"), std::string::npos) << missing.error().message;
  auto load = Model::load(parts[0], ModelLoadOptions{});
  ASSERT_FALSE(load.ok());
  EXPECT_NE(load.error().message.find("a-00002-of-00003.gguf"), std::string::npos) << load.error().message;
  fs::rename(parts[1] + ".away", parts[1]);

  // A part of another split set (2 parts) put in its place.
  const auto other = split_model(src, dir.path() + "/b", 2);
  ASSERT_EQ(other.size(), 2u);
  fs::copy_file(parts[1], parts[1] + ".keep");
  fs::copy_file(other[1], parts[1], fs::copy_options::overwrite_existing);
  auto mixed = gguf_open_model(parts[0]);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.error().message.find("split.count 2"), std::string::npos) << mixed.error().message;
  fs::rename(parts[1] + ".keep", parts[1]);
  ASSERT_TRUE(gguf_open_model(parts[0]).ok());

  // A part renamed away from gguf-split's pattern cannot find its siblings.
  const std::string renamed = dir.path() + "/renamed.gguf";
  fs::copy_file(parts[0], renamed);
  auto lost = gguf_open_model(renamed);
  ASSERT_FALSE(lost.ok());
  EXPECT_NE(lost.error().message.find("does not end in '-00001-of-00003.gguf'"), std::string::npos)
      << lost.error().message;

  // Writing a split needs a limit.
  EXPECT_FALSE(gguf_write_split(*gguf_open_model(parts[0]), dir.path() + "/c", SplitLimits{}).ok());
}

}  // namespace
}  // namespace sniper
