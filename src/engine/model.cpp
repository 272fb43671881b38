// SPDX-License-Identifier: MIT
#include "engine/model.h"

#include <algorithm>

#include "base/log.h"
#include "base/memory_limit.h"
#include "gguf/split.h"
#include "kv/sequence_state.h"
#include "model/tensor_catalog.h"
#include "model/tensor_names.h"

namespace sniper {

Result<ResidencyMode> parse_residency_mode(std::string_view text) {
  if (text == "auto") return ResidencyMode::kAuto;
  if (text == "resident") return ResidencyMode::kResident;
  if (text == "mmap") return ResidencyMode::kMmap;
  if (text == "stream") return ResidencyMode::kStream;
  return make_error("--residency is '%.*s' but must be one of: auto, resident, mmap, stream",
                    static_cast<int>(text.size()), text.data());
}

const char* residency_mode_name(ResidencyMode mode) {
  switch (mode) {
    case ResidencyMode::kAuto: return "auto";
    case ResidencyMode::kResident: return "resident";
    case ResidencyMode::kMmap: return "mmap";
    case ResidencyMode::kStream: return "stream";
  }
  return "?";
}

Model::~Model() {
  // Streaming sources drain their reads before the I/O engine and the file go away.
  embedding_rows_.reset();
  per_layer_rows_.reset();
  layer_streamer_.reset();
  mtp_experts_.reset();
  expert_cache_.reset();
  io_.reset();
  files_.clear();
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const ModelLoadOptions& options) {
  std::unique_ptr<Model> m(new Model());
  m->options_ = options;
  auto gguf = gguf_open_model(path);
  if (!gguf.ok()) return gguf.error();  // already names the path
  m->gguf_ = std::move(gguf).value();
  auto config = load_model_config(m->gguf_);
  if (!config.ok()) return make_error("%s: %s", path.c_str(), config.error().message.c_str());
  m->config_ = std::move(config).value();
  if (options.media_chunk_tokens < 0 || options.media_chunk_tokens > 65536) {
    return make_error("media chunk of %ld tokens must be in [0, 65536]", static_cast<long>(options.media_chunk_tokens));
  }
  if (options.media_chunk_tokens > 0) widen_rings_for_chunks(m->config_, options.media_chunk_tokens);
  const ModelConfig& c = m->config_;
  m->n_ctx_ = options.n_ctx > 0 ? options.n_ctx : std::min<int64_t>(c.n_ctx_train, 4096);

  // Automatic prefill chunk (engine/prefill_chunk.h): long when every weight stays in RAM; when
  // weights stream, as long as the budget allows scratch for (each chunk reads the streamed
  // weights once); 64 through mmap, where the kernel pages whatever a chunk touches.
  const bool auto_batch = options.batch == 0;
  PlanRequest req;
  req.budget_bytes = options.mem_bytes > 0 ? options.mem_bytes : UINT64_MAX / 4;
  req.n_ctx = m->n_ctx_;
  req.kv_type = options.kv_type;
  req.batch = std::max(auto_batch ? kShortPromptChunk : options.batch, options.media_chunk_tokens);
  req.n_sessions = options.n_sessions;
  req.batch_pass_rows = options.batch_pass_rows;
  req.n_checkpoints = options.n_checkpoints;
  req.n_logit_rows = options.n_logit_rows;
  req.force_stream = options.residency == ResidencyMode::kStream;
  req.load_mtp = options.load_mtp;
  req.repack = options.repack;
  if (options.expert_ranks > 1 && options.expert_rank > 0 && options.expert_rank < options.expert_ranks) {
    req.serve_experts_per_layer = (c.n_experts - options.expert_rank + options.expert_ranks - 1) / options.expert_ranks;
  }
  if (options.residency == ResidencyMode::kMmap) {
    m->plan_.all_resident = true;  // nothing streams through our engine; the kernel pages
    m->plan_.budget_bytes = req.budget_bytes;
    m->plan_.n_checkpoints =
        options.n_checkpoints == kAutoCheckpoints
            ? auto_checkpoint_count(req.budget_bytes, req.n_sessions,
                                    SequenceState::checkpoint_bytes_for(layer_state_specs(c), req.n_ctx, req.kv_type))
            : options.n_checkpoints;
  } else {
    Result<MemoryPlan> plan = make_error("no plan");
    if (auto_batch) {
      auto choice = choose_prefill_chunk(m->gguf_, c, req);
      if (!choice.ok()) {
        plan = choice.error();
      } else if (options.residency == ResidencyMode::kResident && !choice->plan.all_resident) {
        plan = make_plan(m->gguf_, c, req);  // the 64-token chunk's plan names the least budget that would do
      } else if (choice->batch < options.media_chunk_tokens) {
        plan = make_plan(m->gguf_, c, req);  // a media chunk runs in one forward: at least its batch
      } else {
        req.batch = choice->batch;
        plan = std::move(choice->plan);
      }
    } else {
      plan = make_plan(m->gguf_, c, req);
    }
    if (!plan.ok()) return make_error("%s: %s", path.c_str(), plan.error().message.c_str());
    m->plan_ = std::move(plan).value();
    // A serving rank's experts go through its cache (holding all it owns when the budget allows).
    const bool serving = req.serve_experts_per_layer > 0 && c.is_moe();
    if (options.residency == ResidencyMode::kResident && !m->plan_.all_resident && !serving) {
      return make_error("%s: --residency resident needs a budget of %s but the budget is %s (use auto or stream)",
                        path.c_str(), format_bytes(m->plan_.all_resident_bytes).c_str(),
                        format_bytes(req.budget_bytes).c_str());
    }
  }
  m->batch_ = req.batch;
  // A tensor no block's table claims is read by nothing (and not loaded): say so once.
  const TensorCatalog catalog(c);
  if (const std::vector<std::string> unclaimed = catalog.unclaimed(m->gguf_); !unclaimed.empty()) {
    std::string names;
    for (size_t i = 0; i < unclaimed.size() && i < 8; ++i) names += (i ? ", " : "") + unclaimed[i];
    LOG_WARN("%s: %zu tensor%s that no block reads (not loaded; `sniper inspect` lists them): %s%s", path.c_str(),
             unclaimed.size(), unclaimed.size() == 1 ? "" : "s", names.c_str(), unclaimed.size() > 8 ? ", ..." : "");
  }
  // Not loaded: what streams, and MTP blocks nothing asked for.
  std::unordered_set<std::string> not_loaded = m->plan_.unloaded_tensors;
  if (!m->plan_.all_resident) not_loaded.insert(m->plan_.streamed_tensors.begin(), m->plan_.streamed_tensors.end());
  // Repacked layouts only when nothing streams (the plan picks none otherwise) and never under mmap.
  const bool repack = options.residency != ResidencyMode::kMmap && !m->plan_.repacked_tensors.empty();
  auto store = WeightStore::open(
      m->gguf_, options.residency == ResidencyMode::kMmap ? Residency::kMmap : Residency::kResident,
      not_loaded.empty() ? nullptr : &not_loaded, repack ? &m->plan_.repacked_tensors : nullptr, options.progress);
  if (!store.ok()) return store.error();
  m->store_ = std::move(store).value();
  auto weights = bind_model_weights(c, *m->store_);
  if (!weights.ok()) return make_error("%s: %s", path.c_str(), weights.error().message.c_str());
  m->weights_ = std::move(weights).value();
  if (!m->plan_.all_resident) SNIPER_TRY(m->setup_streaming());
  if (c.is_moe() && m->expert_cache_ == nullptr) {
    auto views = resident_expert_views(c, m->weights_);
    if (!views.ok()) return make_error("%s: %s", path.c_str(), views.error().message.c_str());
    m->resident_experts_ = std::make_unique<ResidentExperts>(std::move(views).value());
  }

  if (m->gguf_.has("tokenizer.ggml.model")) {
    auto tok = Tokenizer::from_gguf(m->gguf_);
    if (tok.ok()) {
      m->tokenizer_.emplace(std::move(tok).value());
      if (m->tokenizer_->n_vocab() != c.vocab_size) {
        return make_error("%s: the vocabulary has %d tokens but token_embd.weight has %ld rows", path.c_str(),
                          m->tokenizer_->n_vocab(), static_cast<long>(c.vocab_size));
      }
    } else {
      m->tokenizer_error_ = tok.error().message;
    }
  } else {
    m->tokenizer_error_ = "the file has no tokenizer.ggml.model";
  }
  auto tmpl = m->gguf_.get_string_or("tokenizer.chat_template", "");
  if (!tmpl.ok()) return make_error("%s: %s", path.c_str(), tmpl.error().message.c_str());
  m->chat_template_ = *tmpl;
  return m;
}

Status Model::setup_streaming() {
  // One file per part of a split model; the engine reads each tensor from the part holding it.
  std::vector<const DirectFile*> files;
  for (const GgufPart& part : gguf_.parts) {
    auto file = DirectFile::open(part.path, {options_.direct});
    if (!file.ok()) return file.error();
    files_.push_back(std::make_unique<DirectFile>(std::move(file).value()));
    files.push_back(files_.back().get());
  }
  IoOptions io_options;
  io_options.backend = options_.io_backend;
  io_options.queue_depth = options_.queue_depth;
  io_options.fault_injector = options_.io_fault_injector;
  auto io = IoEngine::create(std::move(files), io_options);
  if (!io.ok()) return io.error();
  io_ = std::make_unique<IoEngine>(std::move(io).value());
  const ModelConfig& c = config_;
  if (plan_.stream_embeddings) {
    embedding_rows_ = std::make_unique<StreamedRows>(gguf_.find_tensor(kTokenEmbdName), io_.get());
  }
  if (plan_.stream_per_layer_embeddings) {
    per_layer_rows_ = std::make_unique<StreamedRows>(gguf_.find_tensor(kPerLayerTokenEmbdName), io_.get());
  }
  if (plan_.stream_experts) {
    auto located = locate_experts(gguf_, plan_.n_expert_layers, c.n_experts);
    if (!located.ok()) return make_error("%s: %s", gguf_.path.c_str(), located.error().message.c_str());
    ExpertCacheOptions eo;
    eo.n_slots = plan_.n_expert_slots;
    eo.gate_region_bytes = plan_.slot.gate_bytes;
    eo.up_region_bytes = plan_.slot.up_bytes;
    eo.down_region_bytes = plan_.slot.down_bytes;
    eo.policy = options_.cache_policy;
    eo.prefetch = options_.prefetch;
    eo.prefetch_depth = options_.prefetch_depth;
    auto cache = ExpertCache::create(std::move(located).value(), io_.get(), eo);
    if (!cache.ok()) return cache.error();
    expert_cache_ = std::move(cache).value();
    if (plan_.n_expert_layers > c.n_layers) {
      mtp_experts_ = std::make_unique<LayerOffsetExperts>(expert_cache_.get(), c.n_layers);
    }
  }
  if (plan_.stream_dense_ffn) {
    // Each layer's streamed tensors (the mixer's projections, the dense FFN: the tables' kAttention
    // and kDenseFfn tensors the plan streams), in table order.
    std::vector<std::vector<const GgufTensorInfo*>> groups(static_cast<size_t>(c.n_layers));
    for (const TensorUse& u : tensor_uses(c)) {
      if (u.block >= 0 && plan_.streamed_tensors.count(u.name)) {
        groups[static_cast<size_t>(u.block)].push_back(gguf_.find_tensor(u.name));
      }
    }
    auto streamer = LayerStreamer::create(std::move(groups), io_.get(), plan_.layer_buffer_bytes);
    if (!streamer.ok()) return streamer.error();
    layer_streamer_ = std::move(streamer).value();
  }
  return ok_status();
}

WeightSources Model::sources() {
  WeightSources s;
  s.experts = expert_cache_ ? static_cast<ExpertSource*>(expert_cache_.get()) : resident_experts_.get();
  s.layers = layer_streamer_.get();
  s.embeddings = embedding_rows_.get();
  s.per_layer_embeddings = per_layer_rows_.get();
  return s;
}

Result<const Tokenizer*> Model::tokenizer() const {
  if (!tokenizer_) return make_error("%s: no usable tokenizer: %s", gguf_.path.c_str(), tokenizer_error_.c_str());
  return &*tokenizer_;
}

}  // namespace sniper
