// SPDX-License-Identifier: MIT
// Residency equivalence: streamed runs (expert cache with constant eviction, dense FFN and
// attention streaming, embedding rows from disk) give bit-identical logits to resident runs for
// every model in ../shared/models, across I/O backends, O_DIRECT and buffered reads, cache
// policies and prefetch on/off. Faults (read errors, short reads, a truncated file) are clear
// errors, never wrong output.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/memory_limit.h"
#include "engine/model.h"
#include "engine/plan.h"
#include "engine/session.h"
#include "golden/shared_dir.h"
#include "model/tensor_names.h"
#include "synth/synth_model.h"
#include "test_temp_dir.h"
#include "weights/pack_experts.h"

namespace sniper {
namespace {

const std::vector<int32_t> kIds = {1, 501, 500, 505, 196, 90, 472, 56, 136, 73, 165, 275, 63, 408, 126, 403, 165};

std::string model_path(const std::string& name) { return shared_dir() + "/models/" + name + ".gguf"; }

// Logits of the prompt in chunks of 8 plus 6 single-token steps.
Result<std::vector<float>> run(Model& model) {
  SessionOptions so;
  so.n_threads = 2;
  so.batch = 8;
  auto session = Session::create(model, so);
  if (!session.ok()) return session.error();
  std::vector<float> all;
  SNIPER_TRY((*session)->eval(kIds, &all));
  for (int i = 0; i < 6; ++i) {
    const int32_t one[1] = {kIds[static_cast<size_t>(i) * 2]};
    SNIPER_TRY((*session)->eval(one));
    all.insert(all.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
  }
  return all;
}

Result<std::vector<float>> run(const std::string& path, const ModelLoadOptions& lo) {
  auto model = Model::load(path, lo);
  if (!model.ok()) return model.error();
  return run(**model);
}

// The plan with streaming forced and no budget limit: its smallest accepted budget and the budget
// that keeps every weight in RAM.
MemoryPlan forced_stream_plan(const std::string& path, int64_t batch) {
  auto file = gguf_open(path);
  EXPECT_TRUE(file.ok());
  auto config = load_model_config(*file);
  EXPECT_TRUE(config.ok());
  PlanRequest req;
  req.budget_bytes = UINT64_MAX / 4;
  req.force_stream = true;
  req.n_ctx = std::min<int64_t>(config->n_ctx_train, 4096);
  req.batch = batch;
  auto plan = make_plan(*file, *config, req);
  EXPECT_TRUE(plan.ok());
  return *plan;
}

uint64_t min_stream_budget(const std::string& path, int64_t batch) {
  return forced_stream_plan(path, batch).min_budget_bytes;
}

uint64_t all_resident_budget(const std::string& path, int64_t batch) {
  return forced_stream_plan(path, batch).all_resident_bytes;
}

ModelLoadOptions streamed(uint64_t budget) {
  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kStream;
  lo.mem_bytes = budget;
  lo.batch = 8;
  return lo;
}

class StreamingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamingTest, StreamedEqualsResidentBitForBit) {
  const std::string path = model_path(GetParam());
  ModelLoadOptions resident;
  resident.batch = 8;
  auto base = run(path, resident);
  ASSERT_TRUE(base.ok()) << base.error().message;
  const uint64_t min_budget = min_stream_budget(path, 8);
  struct Variant {
    const char* what;
    IoBackend backend;
    DirectMode direct;
    CachePolicy policy;
    bool prefetch;
    uint64_t extra;
    int prefetch_depth = 1;
  };
  const Variant variants[] = {
      {"uring direct lfru prefetch, minimum budget", IoBackend::kAuto, DirectMode::kAuto, CachePolicy::kLfru, true, 0},
      {"pread buffered lru", IoBackend::kPread, DirectMode::kForceBuffered, CachePolicy::kLru, false, 0},
      {"uring direct lru, roomier budget", IoBackend::kAuto, DirectMode::kAuto, CachePolicy::kLru, true, 2 << 20},
      {"prefetch two layers ahead, minimum budget", IoBackend::kAuto, DirectMode::kAuto, CachePolicy::kLfru, true, 0,
       2},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.what);
    ModelLoadOptions lo = streamed(min_budget + v.extra);
    lo.io_backend = v.backend;
    lo.direct = v.direct;
    lo.cache_policy = v.policy;
    lo.prefetch = v.prefetch;
    lo.prefetch_depth = v.prefetch_depth;
    auto model = Model::load(path, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_TRUE((*model)->streams());
    auto out = run(path, lo);
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_EQ(out->size(), base->size());
    EXPECT_TRUE(*out == *base) << "streamed logits differ from resident ones";
  }
}

INSTANTIATE_TEST_SUITE_P(AllModels, StreamingTest,
                         ::testing::Values("stories260K", "stories260K-Q8_0", "syn-llama", "syn-llama-BF16",
                                           "syn-llama-F16", "syn-llama-Q2_K", "syn-llama-Q3_K_M", "syn-llama-Q4_0",
                                           "syn-llama-Q4_K_M", "syn-llama-Q5_K_M", "syn-llama-Q6_K", "syn-llama-Q8_0",
                                           "syn-mixtral-Q4_K_M", "syn-qwen2", "syn-qwen2-Q8_0", "syn-qwen3",
                                           "syn-qwen3-Q4_K_M", "syn-qwen3moe-Q4_K_M", "syn-qwen3moe-Q6_K",
                                           "syn-qwen3moe-Q8_0", "iq/syn-qwen3moe-IQ3_XXS", "iq/syn-llama-IQ2_M",
                                           "iq/syn-llama-IQ1_M", "iq/syn-llama-TQ1_0", "syn-qwen35moe-small",
                                           "syn-qwen3next-small", "syn-qwen35-small", "syn-qwen35-Q4_K_M"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& ch : s) ch = (ch == '-' || ch == '/') ? '_' : ch;
                           return s;
                         });

// gemma4 (issue 21): the MoE's fused gate_up experts through the expert cache, the E-model's
// dense FFN, attention and per-layer embedding rows from disk; 23 positions pass the 16-token
// window, so the sliding layers' rings wrap.
INSTANTIATE_TEST_SUITE_P(Gemma4, StreamingTest, ::testing::Values("syn-gemma4moe-small", "syn-gemma4e-small"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string s = info.param;
                           for (char& ch : s) ch = (ch == '-') ? '_' : ch;
                           return s;
                         });

// A dense hybrid (qwen35: delta-net projections are a third of a 27B file) under the smallest
// budget streams its mixers' projections with the FFN, delta-net layers' included, and the
// logits stay the resident ones (the parameterised test above runs the same budget).
TEST(Streaming, DenseHybridStreamsDeltaNetProjectionsUnderTheMinimumBudget) {
  for (const char* name : {"syn-qwen35-small", "syn-qwen35-Q4_K_M"}) {
    SCOPED_TRACE(name);
    const std::string path = model_path(name);
    auto model = Model::load(path, streamed(min_stream_budget(path, 8)));
    ASSERT_TRUE(model.ok()) << model.error().message;
    const MemoryPlan& plan = (*model)->plan();
    EXPECT_TRUE(plan.stream_attention);
    for (const char* t : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_out.weight",
                          "blk.3.attn_q.weight", "blk.0.ffn_up.weight"}) {
      EXPECT_EQ(plan.streamed_tensors.count(t), 1u) << t;
    }
    EXPECT_EQ(plan.streamed_tensors.count("blk.0.ssm_conv1d.weight"), 0u);
    ModelLoadOptions resident;
    resident.batch = 8;
    auto base = run(path, resident);
    ASSERT_TRUE(base.ok()) << base.error().message;
    auto out = run(path, streamed(min_stream_budget(path, 8)));
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_TRUE(*out == *base) << "streamed delta-net projections changed the logits";
  }
}

// When the mixers stream too, budget room keeps whole layers (mixer and FFN) resident, spread
// over the depth; still exact. A 12-layer model whose FFN is as small as its attention, so that
// the room between streaming both and streaming only the FFN holds whole layers.
TEST(Streaming, WholeLayersKeptResidentWhileMixersStream) {
  const test::TempDir dir("streaming");
  const std::string path = dir.file("whole_layers.gguf");
  SynthSpec spec;
  spec.arch = "llama";
  spec.dim = 128;
  spec.n_layers = 12;
  spec.n_heads = 4;
  spec.n_kv_heads = 4;
  spec.head_dim = 32;
  spec.hidden_dim = 96;
  spec.vocab_size = 512;
  spec.n_ctx = 256;
  spec.type = "q8_0";
  ASSERT_TRUE(write_synth_model(spec, path, nullptr).ok());
  ModelLoadOptions resident;
  resident.batch = 8;
  auto base = run(path, resident);
  ASSERT_TRUE(base.ok()) << base.error().message;
  const uint64_t min_budget = min_stream_budget(path, 8);
  auto at_min = Model::load(path, streamed(min_budget));
  ASSERT_TRUE(at_min.ok()) << at_min.error().message;
  ASSERT_TRUE((*at_min)->plan().stream_attention);
  EXPECT_TRUE((*at_min)->plan().resident_ffn_layers.empty());
  const uint64_t layer = (*at_min)->plan().layer_buffer_bytes;
  uint64_t roomy = 0;
  std::unique_ptr<Model> roomier;
  for (int halves = 1; halves <= 16 && roomy == 0; ++halves) {
    const uint64_t budget = min_budget + layer * halves / 2;
    auto m = Model::load(path, streamed(budget));
    ASSERT_TRUE(m.ok()) << m.error().message;
    if ((*m)->plan().stream_attention && !(*m)->plan().resident_ffn_layers.empty()) {
      roomy = budget;
      roomier = std::move(m).value();
    }
  }
  ASSERT_NE(roomy, 0u) << "no budget keeps whole layers while the mixers stream";
  const MemoryPlan& rp = roomier->plan();
  EXPECT_LE(rp.planned_bytes(), roomy);
  const int64_t kept = rp.resident_ffn_layers.front();
  for (const char* k : {"ffn_up.weight", "attn_q.weight", "attn_output.weight"}) {
    EXPECT_EQ(rp.streamed_tensors.count(layer_tensor_name(kept, k)), 0u) << "a kept layer streams";
  }
  const int64_t other = kept == 0 ? 1 : 0;
  EXPECT_EQ(rp.streamed_tensors.count(layer_tensor_name(other, "attn_q.weight")), 1u);
  EXPECT_NE(rp.describe().find("of which whole layers"), std::string::npos) << rp.describe();
  roomier.reset();
  auto out = run(path, streamed(roomy));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(*out == *base) << "whole resident layers changed the logits";
  std::filesystem::remove(path);
}

// A dense model with budget room beyond the two layer buffers keeps whole layers' FFN resident
// (spread over the depth): fewer bytes stream per token, the logits stay the resident ones, and
// the plan stays within the budget.
TEST(Streaming, DenseLayersKeptResidentWhereTheBudgetAllows) {
  const std::string path = model_path("stories260K");  // 5 layers: more than the two buffers hold
  ModelLoadOptions resident;
  resident.batch = 8;
  auto base = run(path, resident);
  ASSERT_TRUE(base.ok()) << base.error().message;
  const uint64_t min_budget = min_stream_budget(path, 8);

  // Bytes streamed per forward pass (one acquire of every layer) at a budget.
  auto streamed_per_pass = [&](uint64_t budget, MemoryPlan* plan_out) -> uint64_t {
    auto model = Model::load(path, streamed(budget));
    EXPECT_TRUE(model.ok()) << model.error().message;
    if (!model.ok()) return 0;
    *plan_out = (*model)->plan();
    EXPECT_LE(plan_out->planned_bytes(), budget);
    LayerStreamer* ls = (*model)->layer_streamer();
    EXPECT_NE(ls, nullptr);
    if (ls == nullptr) return 0;
    const int64_t n_layers = static_cast<int64_t>((*model)->config().n_layers);
    for (int64_t round = 0; round < 2; ++round) {  // the second round is the steady state
      const uint64_t before = ls->stats().bytes_read;
      for (int64_t l = 0; l < n_layers; ++l) EXPECT_TRUE(ls->acquire(l).ok());
      if (round == 1) return ls->stats().bytes_read - before;
    }
    return 0;
  };
  MemoryPlan tight, roomy;
  const uint64_t all_layers = streamed_per_pass(min_budget, &tight);
  EXPECT_TRUE(tight.resident_ffn_layers.empty());
  uint64_t dense_ffn = 0;
  auto file = gguf_open(path);
  ASSERT_TRUE(file.ok());
  for (const std::string& name : tight.streamed_tensors) {
    if (name.find("ffn_") != std::string::npos) dense_ffn += file->find_tensor(name)->nbytes;
  }
  const uint64_t roomy_budget = min_budget + dense_ffn / 2;
  const uint64_t some_layers = streamed_per_pass(roomy_budget, &roomy);
  EXPECT_GT(roomy.resident_ffn_layers.size(), 0u);
  EXPECT_LT(roomy.resident_ffn_layers.size(), 4u);
  EXPECT_GT(roomy.resident_ffn_bytes, 0u);
  EXPECT_LT(some_layers, all_layers);
  EXPECT_GT(some_layers, 0u) << "streaming was forced: at least one layer still streams";
  EXPECT_NE(roomy.describe().find("of which dense FFN"), std::string::npos) << roomy.describe();

  auto out = run(path, streamed(roomy_budget));
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_TRUE(*out == *base) << "partly resident dense streaming changed the logits";
}

// Pages of `path` in the page cache (mincore over a mapping of the file).
size_t cached_pages(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path;
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  const size_t size = static_cast<size_t>(st.st_size), page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  EXPECT_NE(map, MAP_FAILED);
  std::vector<unsigned char> in(static_cast<size_t>((size + page - 1) / page));
  EXPECT_EQ(::mincore(map, size, in.data()), 0);
  ::munmap(map, size);
  ::close(fd);
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// Loading a model leaves none of its file in the page cache, including pages cached before it
// (by writing or reading the file): under a cgroup cap they would count twice, and a baseline
// run after it (mmap) would be served from memory nobody paid for.
TEST(Streaming, LoadingLeavesNoneOfTheFileInThePageCache) {
  const test::TempDir dir("streaming");
  const std::string copy = dir.file("cache_test.gguf");
  std::filesystem::copy_file(model_path("syn-qwen3moe-Q4_K_M"), copy,
                             std::filesystem::copy_options::overwrite_existing);
  {  // Written back, so that its pages are clean (the kernel drops only clean pages).
    const int fd = ::open(copy.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
  }
  for (bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "resident");
    {  // Read it through the cache, so that every page is cached (and clean).
      std::ifstream in(copy, std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      ASSERT_FALSE(bytes.empty());
    }
    ASSERT_GT(cached_pages(copy), 0u);
    ModelLoadOptions lo;
    if (stream) lo = streamed(min_stream_budget(copy, 8));
    auto model = Model::load(copy, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ(cached_pages(copy), 0u);
  }
  std::filesystem::remove(copy);
}

TEST(Streaming, PlanPutsExpertsInACacheAndRespectsTheBudget) {
  const std::string path = model_path("syn-qwen3moe-Q8_0");
  const uint64_t min_budget = min_stream_budget(path, 8);
  auto model = Model::load(path, streamed(min_budget));
  ASSERT_TRUE(model.ok()) << model.error().message;
  const MemoryPlan& p = (*model)->plan();
  EXPECT_TRUE(p.stream_experts);
  EXPECT_TRUE(p.stream_embeddings);
  EXPECT_LE(p.planned_bytes(), min_budget);
  EXPECT_EQ(p.n_expert_slots, (*model)->config().n_experts_active + 2);
  EXPECT_NE(p.describe().find("expert cache"), std::string::npos);
  // Below the minimum: a clear error naming the minimum.
  auto small = Model::load(path, streamed(min_budget - 4096));
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("minimum"), std::string::npos) << small.error().message;
}

// --residency resident under a budget too small for every weight: the error names the budget
// that would do (not the streaming minimum), and exactly that budget loads.
TEST(Streaming, ResidentBelowItsBudgetNamesTheBudgetItNeeds) {
  const std::string path = model_path("syn-qwen3moe-Q8_0");
  ModelLoadOptions lo;
  lo.residency = ResidencyMode::kResident;
  lo.batch = 8;
  auto unlimited = Model::load(path, lo);
  ASSERT_TRUE(unlimited.ok()) << unlimited.error().message;
  const MemoryPlan& plan = (*unlimited)->plan();
  ASSERT_TRUE(plan.all_resident);
  ASSERT_GT(plan.all_resident_bytes, plan.min_budget_bytes / 2);
  lo.mem_bytes = plan.all_resident_bytes - 4096;
  auto small = Model::load(path, lo);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.error().message.find("needs a budget of " + format_bytes(plan.all_resident_bytes)), std::string::npos)
      << small.error().message;
  lo.mem_bytes = plan.all_resident_bytes;
  auto exact = Model::load(path, lo);
  EXPECT_TRUE(exact.ok()) << exact.error().message;
}

// batch = 0: chunks of 512 when every weight stays in RAM, else 64 (also when only the smaller
// scratch lets everything stay resident); an explicit batch is kept.
TEST(Streaming, AutomaticBatchIsLongOnlyWhenNothingStreams) {
  const std::string path = model_path("syn-qwen3moe-Q8_0");
  ModelLoadOptions lo;
  lo.batch = 0;
  auto unlimited = Model::load(path, lo);
  ASSERT_TRUE(unlimited.ok()) << unlimited.error().message;
  EXPECT_TRUE((*unlimited)->plan().all_resident);
  EXPECT_EQ((*unlimited)->planned_batch(), 512);
  ModelLoadOptions short_chunks;
  short_chunks.batch = 64;
  auto at64 = Model::load(path, short_chunks);
  ASSERT_TRUE(at64.ok());
  EXPECT_EQ((*at64)->planned_batch(), 64);
  lo.mem_bytes = (*at64)->plan().all_resident_bytes;  // resident only with the short chunk's scratch
  auto tight = Model::load(path, lo);
  ASSERT_TRUE(tight.ok()) << tight.error().message;
  EXPECT_TRUE((*tight)->plan().all_resident);
  EXPECT_EQ((*tight)->planned_batch(), 64);
  ModelLoadOptions stream = streamed(min_stream_budget(path, 64));
  stream.batch = 0;
  auto streaming = Model::load(path, stream);
  ASSERT_TRUE(streaming.ok()) << streaming.error().message;
  EXPECT_FALSE((*streaming)->plan().all_resident);
  EXPECT_EQ((*streaming)->planned_batch(), 64);
}

TEST(Streaming, CacheStatisticsAccountForEveryRead) {
  const std::string path = model_path("syn-qwen3moe-Q4_K_M");
  auto model = Model::load(path, streamed(min_stream_budget(path, 8)));
  ASSERT_TRUE(model.ok());
  SessionOptions so;
  so.batch = 8;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE((*session)->eval(kIds).ok());
  const ExpertCache* cache = (*model)->expert_cache();
  ASSERT_NE(cache, nullptr);
  const LayerCacheStats t = cache->stats().total();
  EXPECT_GT(t.requests, 0u);
  EXPECT_LT(t.hits, t.requests);  // a cache of k+2 slots must miss
  EXPECT_GT(t.bytes_read, 0u);
  const IoStats& io = (*model)->io()->stats();
  // Expert reads + embedding rows = everything the device delivered (no silent extra reads).
  EXPECT_LE(t.bytes_read, io.bytes_read);
  EXPECT_EQ(io.n_failed, 0u);
  // The waits for reads no hint covered are a part of all the waits.
  EXPECT_GE(t.demand_stall_seconds, 0.0);
  EXPECT_LE(t.demand_stall_seconds, t.stall_seconds);
}

// Without prefetch hints every read is started by the layer that needs it, so every wait is a
// demand wait; each layer's reads are waited for, so some time is counted.
TEST(Streaming, WithoutPrefetchEveryWaitIsADemandWait) {
  const std::string path = model_path("syn-qwen3moe-Q4_K_M");
  ModelLoadOptions lo = streamed(min_stream_budget(path, 8));
  lo.prefetch = false;
  auto model = Model::load(path, lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto out = run(**model);
  ASSERT_TRUE(out.ok()) << out.error().message;
  const LayerCacheStats t = (*model)->expert_cache()->stats().total();
  EXPECT_EQ(t.prefetch_issued, 0u);
  EXPECT_GT(t.stall_seconds, 0.0);
  EXPECT_EQ(t.demand_stall_seconds, t.stall_seconds);
}

// A layer whose experts all find slots at begin_layer() keeps them pinned until end_layer()
// (views_stable), so its experts run together, those in hand while the rest of the layer's reads
// land, and the shared expert computes before them; a layer that must defer some runs them one
// by one. Both give the resident logits, and the statistics say which ran.
TEST(Streaming, LayersWithRoomRunTheirExpertsTogetherAndTheOthersOneByOne) {
  for (const char* name : {"syn-qwen3moe-Q4_K_M", "syn-qwen35moe-small"}) {
    SCOPED_TRACE(name);
    const std::string path = model_path(name);
    ModelLoadOptions resident;
    resident.batch = 8;
    auto base = run(path, resident);
    ASSERT_TRUE(base.ok()) << base.error().message;
    const uint64_t min_budget = min_stream_budget(path, 8);
    for (const uint64_t extra : {uint64_t{0}, uint64_t{64} << 20}) {
      SCOPED_TRACE(extra);
      const ModelLoadOptions lo = streamed(min_budget + extra);
      auto model = Model::load(path, lo);
      ASSERT_TRUE(model.ok()) << model.error().message;
      auto out = run(**model);
      ASSERT_TRUE(out.ok()) << out.error().message;
      EXPECT_TRUE(*out == *base) << "streamed logits differ from resident ones";
      const LayerCacheStats t = (*model)->expert_cache()->stats().total();
      EXPECT_GT(t.opened, 0u);
      if (extra == 0) {
        EXPECT_GT(t.opened_deferred, 0u) << "the minimum budget should make a chunk defer experts";
      } else {
        EXPECT_EQ(t.opened_deferred, 0u) << "64 MiB more leaves a slot for every expert of a layer";
      }
    }
  }
}

std::string copy_to_temp(const test::TempDir& dir, const std::string& src, const std::string& name) {
  const std::string dst = dir.file(name);
  std::filesystem::copy_file(src, dst, std::filesystem::copy_options::overwrite_existing);
  return dst;
}

TEST(Streaming, ReadErrorsAreErrorsNotWrongOutput) {
  const std::string path = model_path("syn-qwen3moe-Q4_K_M");
  for (int mode = 0; mode < 2; ++mode) {
    SCOPED_TRACE(mode == 0 ? "EIO" : "short reads");
    ModelLoadOptions lo = streamed(min_stream_budget(path, 8));
    std::atomic<int> calls{0};
    lo.io_fault_injector = [&calls, mode](uint64_t, uint64_t len) {
      FaultAction a;
      if (++calls > 40) {
        if (mode == 0) a.error = EIO;
        else if (len >= 8192) a.max_bytes = len / 2 / 4096 * 4096;  // short but block-aligned, as O_DIRECT is
      }
      return a;
    };
    auto model = Model::load(path, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    SessionOptions so;
    so.batch = 8;
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok());
    Status st = (*session)->eval(kIds);
    if (mode == 0) {
      ASSERT_FALSE(st.ok());
      EXPECT_NE(st.error().message.find("layer"), std::string::npos) << st.error().message;
    } else {
      // Short reads before end of file are retried, so the result is still right.
      ASSERT_TRUE(st.ok()) << st.error().message;
    }
  }
}

TEST(Streaming, PackedFileGivesTheSameLogitsWithOneReadPerExpert) {
  for (const char* name : {"syn-qwen3moe-Q4_K_M", "syn-mixtral-Q4_K_M", "syn-gemma4moe-small", "syn-qwen35moe-small"}) {
    SCOPED_TRACE(name);
    const std::string path = model_path(name);
    const test::TempDir dir("streaming-packed");
    const std::string packed = dir.file(std::string(name) + ".gguf");
    Status st = pack_experts(path, packed, nullptr);
    ASSERT_TRUE(st.ok()) << st.error().message;
    ModelLoadOptions resident;
    resident.batch = 8;
    auto base = run(path, resident);
    ASSERT_TRUE(base.ok());
    auto packed_resident = run(packed, resident);
    ASSERT_TRUE(packed_resident.ok()) << packed_resident.error().message;
    EXPECT_TRUE(*packed_resident == *base);
    const ModelLoadOptions lo = streamed(min_stream_budget(packed, 8));
    auto packed_streamed = run(packed, lo);
    ASSERT_TRUE(packed_streamed.ok()) << packed_streamed.error().message;
    EXPECT_TRUE(*packed_streamed == *base);
    // One read per expert: reads issued = expert misses (+ embedding rows), not three per miss.
    auto model = Model::load(packed, lo);
    ASSERT_TRUE(model.ok());
    SessionOptions so;
    so.batch = 8;
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok());
    ASSERT_TRUE((*session)->eval(kIds).ok());
    const LayerCacheStats t = (*model)->expert_cache()->stats().total();
    const uint64_t misses = t.requests - t.hits + t.prefetch_issued;
    EXPECT_LE((*model)->io()->stats().n_requests, misses + kIds.size());
    std::filesystem::remove(packed);
  }
}

// Cache-aware routing is opt-in: off, nothing changes; on, routing changes and the logits move,
// and how far is printed for the record (the reference prompts of the MoE models). Every MoE
// family: Mixtral (llama), Qwen3-MoE, Qwen3.5-MoE, Qwen3-Next and Gemma 4 (whose own MoE block
// once ignored the bias: 0 of its choices changed).
TEST(Streaming, RoutingBiasIsOptInAndMeasured) {
  for (const char* name : {"syn-qwen3moe-Q4_K_M", "syn-qwen3moe-Q8_0", "syn-mixtral-Q4_K_M", "syn-qwen35moe-small",
                           "syn-qwen3next-small", "syn-gemma4moe-small"}) {
    SCOPED_TRACE(name);
    const std::string path = model_path(name);
    // A cache of about half the experts: the window then often holds a cached expert.
    const ModelLoadOptions lo = streamed((min_stream_budget(path, 8) + all_resident_budget(path, 8)) / 2);
    auto eval = [&](RoutingBias bias, RoutingStats* stats) -> std::vector<float> {
      auto model = Model::load(path, lo);
      EXPECT_TRUE(model.ok());
      SessionOptions so;
      so.batch = 1;  // decode-like: one token per forward, so the cache state matters per token
      so.routing_bias = bias;
      auto session = Session::create(**model, so);
      EXPECT_TRUE(session.ok()) << session.error().message;
      std::vector<float> all;
      for (int32_t id : kIds) {
        const int32_t one[1] = {id};
        EXPECT_TRUE((*session)->eval(one).ok());
        all.insert(all.end(), (*session)->last_logits().begin(), (*session)->last_logits().end());
      }
      *stats = (*session)->routing_stats();
      return all;
    };
    RoutingStats off_stats, on_stats;
    const std::vector<float> off = eval({}, &off_stats);
    auto model = Model::load(path, lo);
    ASSERT_TRUE(model.ok());
    const int64_t k = (*model)->config().n_experts_active;
    const std::vector<float> on =
        eval({std::max<int64_t>(1, k / 2), std::min<int64_t>((*model)->config().n_experts, 2 * k)}, &on_stats);
    EXPECT_EQ(off_stats.changed, 0u);
    EXPECT_GT(on_stats.selections, 0u);
    EXPECT_GT(on_stats.changed, 0u) << "the bias changed no expert choice";
    double num = 0, den = 0;
    for (size_t i = 0; i < off.size(); ++i) {
      num += (static_cast<double>(on[i]) - off[i]) * (static_cast<double>(on[i]) - off[i]);
      den += static_cast<double>(off[i]) * off[i];
    }
    std::printf("[routing-bias] %-22s %.1f%% of expert choices changed, logits NSE vs exact routing %.3e\n", name,
                100.0 * static_cast<double>(on_stats.changed) / static_cast<double>(on_stats.selections), num / den);
    EXPECT_GT(num, 0.0) << "the bias did not move the logits";
    EXPECT_FALSE(Session::create(**model, SessionOptions{.routing_bias = {k + 1, k}}).ok());  // keep > k
  }
}

TEST(Streaming, TruncatedFileDuringARunIsAClearError) {
  const test::TempDir dir("streaming");
  const std::string path = copy_to_temp(dir, model_path("syn-qwen3moe-Q8_0"), "truncated.gguf");
  auto model = Model::load(path, streamed(min_stream_budget(path, 8)));
  ASSERT_TRUE(model.ok()) << model.error().message;
  SessionOptions so;
  so.batch = 8;
  auto session = Session::create(**model, so);
  ASSERT_TRUE(session.ok());
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  Status st = (*session)->eval(kIds);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("truncated"), std::string::npos) << st.error().message;
  std::filesystem::remove(path);
}

// gemma4 at the minimum budget really streams: experts are evicted and re-read (each fused
// gate_up expert as one read, so its bytes are one aligned span), the per-layer embedding table
// is read by rows, and the logits still match the resident run (StreamingTest above).
TEST(Streaming, Gemma4StreamsExpertsAndPerLayerRows) {
  {
    const std::string path = model_path("syn-gemma4moe-small");
    auto model = Model::load(path, streamed(min_stream_budget(path, 8)));
    ASSERT_TRUE(model.ok()) << model.error().message;
    ASSERT_NE((*model)->expert_cache(), nullptr);
    SessionOptions so;
    so.n_threads = 2;
    so.batch = 8;
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok()) << session.error().message;
    ASSERT_TRUE((*session)->eval(kIds).ok());
    const ExpertCacheStats& st = (*model)->expert_cache()->stats();
    EXPECT_GT(st.evictions, 0u);
    EXPECT_GT(st.total().bytes_read, 0u);
  }
  {
    const std::string path = model_path("syn-gemma4e-small");
    auto model = Model::load(path, streamed(min_stream_budget(path, 8)));
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_TRUE((*model)->plan().stream_per_layer_embeddings);
    ASSERT_NE((*model)->per_layer_rows(), nullptr);
    EXPECT_EQ((*model)->weights().per_layer_token_embd.data, nullptr);
    SessionOptions so;
    so.n_threads = 2;
    so.batch = 8;
    auto session = Session::create(**model, so);
    ASSERT_TRUE(session.ok()) << session.error().message;
    ASSERT_TRUE((*session)->eval(kIds).ok());
    EXPECT_GT((*model)->per_layer_rows()->bytes_read(), 0u);
  }
}

}  // namespace
}  // namespace sniper
