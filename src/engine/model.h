// SPDX-License-Identifier: MIT
// Model: everything loaded once per GGUF file: the parsed file, the memory plan, the weight
// store, the config, the bound weights, the tokenizer, and — when the plan streams — the I/O
// engine with the expert cache, the dense layer streamer or the embedding row reader.
// The read-only parts are thread-safe to share; the streaming sources are stateful, so one
// forward pass at a time may use a Model (sessions serialize on it).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "engine/plan.h"
#include "engine/prefill_chunk.h"
#include "gguf/reader.h"
#include "io/direct_file.h"
#include "io/io_engine.h"
#include "model/config.h"
#include "model/model_weights.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"
#include "weights/expert_cache.h"
#include "weights/layer_streamer.h"
#include "weights/streamed_rows.h"
#include "weights/weight_store.h"

namespace sniper {

enum class ResidencyMode {
  kAuto,      // resident if the model fits the budget, else stream
  kResident,  // everything in RAM (an Error if it does not fit the budget)
  kMmap,      // map the file and let the kernel page (the usual approach; a baseline)
  kStream,    // stream experts / dense FFN even if everything would fit
};
Result<ResidencyMode> parse_residency_mode(std::string_view text);
const char* residency_mode_name(ResidencyMode mode);

// The automatic prompt chunk is engine/prefill_chunk.h's; the server keeps kShortPromptChunk
// (one slot's chunk runs between the others' decode steps).

struct ModelLoadOptions {
  ResidencyMode residency = ResidencyMode::kAuto;
  uint64_t mem_bytes = 0;         // memory budget; 0 = unlimited (everything resident)
  int64_t n_ctx = 0;              // context to plan for; 0 = min(model, 4096)
  int64_t batch = 64;             // prefill chunk to plan scratch for; 0 = auto (see Model::load)
  int64_t n_sessions = 1;         // sessions to plan KV caches and scratch for (server slots)
  int64_t batch_pass_rows = 0;    // > 0: and a batched pass over them of this many rows (PlanRequest)
  int64_t n_checkpoints = 0;      // state checkpoints per session to plan for, or kAutoCheckpoints
                                  // (plan().n_checkpoints is the count to give SessionOptions)
  int64_t n_logit_rows = 1;       // rows of logits a session and its caller hold at once (PlanRequest)
  KvConfig kv_type = KvConfig();  // K and V cache types, flash attention (kv/kv_cache.h)
  CachePolicy cache_policy = CachePolicy::kLfru;
  bool prefetch = true;
  int prefetch_depth = 1;  // layers ahead the expert prefetcher predicts
  IoBackend io_backend = IoBackend::kAuto;
  DirectMode direct = DirectMode::kAuto;
  uint32_t queue_depth = 32;
  FaultInjector io_fault_injector;  // tests: make streamed reads fail or come back short
  bool load_mtp = false;            // load the MTP draft head's block resident (PlanRequest::load_mtp)
  bool repack = true;               // i-quant weights in lookup-free layouts when all resident (PlanRequest::repack)
  LoadProgress progress;            // sees the resident weights' bytes as they are read (may be empty)
  // The most tokens of a media chunk that attends both ways (a gemma4v image; 0: none): the batch
  // is at least this, and sliding rings hold such a chunk whole (widen_rings_for_chunks).
  int64_t media_chunk_tokens = 0;
  // Expert parallel (src/dist/expert_parallel.h): this process is serving rank expert_rank > 0 of
  // expert_ranks and computes for rank 0 only the routed experts e with e mod expert_ranks ==
  // expert_rank; it loads only those (PlanRequest::serve_experts_per_layer). 0 ranks: a whole
  // model. Ignored for dense models.
  int expert_rank = 0;
  int expert_ranks = 0;
};

class Model {
 public:
  // Parses, validates, plans and binds the model at `path`. Errors name the file and the problem.
  static Result<std::unique_ptr<Model>> load(const std::string& path, const ModelLoadOptions& options);
  ~Model();

  const GgufFile& gguf() const { return gguf_; }
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const WeightStore& store() const { return *store_; }
  const MemoryPlan& plan() const { return plan_; }
  const ModelLoadOptions& options() const { return options_; }
  int64_t planned_n_ctx() const { return n_ctx_; }
  // The prefill chunk the plan holds scratch for (options.batch, or the automatic choice).
  int64_t planned_batch() const { return batch_; }
  bool streams() const { return !plan_.all_resident; }
  // The sources a Transformer needs for tensors that are not resident.
  WeightSources sources();
  ExpertCache* expert_cache() { return expert_cache_.get(); }
  // The loaded MTP block's routed experts as layer 0 (MtpHead::create), when they stream through
  // the expert cache; null when they are resident (or the model has none loaded).
  ExpertSource* mtp_experts() { return mtp_experts_.get(); }
  LayerStreamer* layer_streamer() { return layer_streamer_.get(); }
  StreamedRows* embedding_rows() { return embedding_rows_.get(); }
  StreamedRows* per_layer_rows() { return per_layer_rows_.get(); }
  IoEngine* io() { return io_.get(); }
  // The model's tokenizer; an Error if the file carries no vocabulary.
  Result<const Tokenizer*> tokenizer() const;
  // The tokenizer.chat_template string, empty if absent.
  const std::string& chat_template() const { return chat_template_; }

 private:
  Model() = default;
  Status setup_streaming();

  GgufFile gguf_;
  ModelLoadOptions options_;
  int64_t n_ctx_ = 0;
  int64_t batch_ = 0;
  MemoryPlan plan_;
  std::unique_ptr<WeightStore> store_;
  ModelConfig config_;
  ModelWeights weights_;
  std::optional<Tokenizer> tokenizer_;
  std::string tokenizer_error_;
  std::string chat_template_;
  std::vector<std::unique_ptr<DirectFile>> files_;  // the model file, or each part of a split model
  std::unique_ptr<IoEngine> io_;
  std::unique_ptr<ExpertCache> expert_cache_;
  std::unique_ptr<LayerStreamer> layer_streamer_;
  std::unique_ptr<StreamedRows> embedding_rows_;
  std::unique_ptr<StreamedRows> per_layer_rows_;  // gemma4's per_layer_token_embd when streamed
  std::unique_ptr<ResidentExperts> resident_experts_;
  std::unique_ptr<LayerOffsetExperts> mtp_experts_;  // the cache's layer n_layers, as layer 0
};

}  // namespace sniper
