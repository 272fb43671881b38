// SPDX-License-Identifier: MIT
#include "engine/plan.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/memory_limit.h"
#include "model/mtp_head.h"
#include "model/tensor_catalog.h"
#include "model/tensor_names.h"
#include "model/transformer.h"
#include "quant/iq_repack.h"

namespace sniper {

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kPage = 4096;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string mib(uint64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%10.1f MiB", static_cast<double>(bytes) / kMiB);
  return buf;
}

}  // namespace

std::string MemoryPlan::describe() const {
  std::string s;
  auto line = [&](const char* what, uint64_t bytes, const std::string& note = "") {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "  %-30s%s  %s\n", what, mib(bytes).c_str(), note.c_str());
    s.append(buf);
  };
  s.append("memory plan for a budget of ");
  s.append(mib(budget_bytes));
  s.append("\n");
  line("KV cache", kv_bytes, "(" + kv_config_name(kv_config) + (n_sessions > 1 ? "; one per session)" : ")"));
  if (checkpoint_bytes > 0) {
    char note[96];
    std::snprintf(note, sizeof(note), "(%ld per session: recurrent states / window rings, for prefix reuse)",
                  static_cast<long>(n_checkpoints));
    line("state checkpoints", checkpoint_bytes, note);
  }
  line("activation scratch", scratch_bytes);
  if (batch_scratch_bytes > 0) line("batch pass scratch", batch_scratch_bytes, "(one pass over every slot)");
  line("runtime overhead", overhead_bytes);
  line("resident weights", resident_weight_bytes,
       all_resident       ? "(the whole model)"
       : stream_attention ? "(norms, router, output head)"
                          : "(attention, norms, routers, output head)");
  if (mtp_weight_bytes > 0) {
    line("  of which the MTP block", mtp_weight_bytes,
         mtp_streamed_expert_bytes > 0 ? "(draft head, --spec-type mtp; its experts stream with the others)"
                                       : "(draft head, --spec-type mtp)");
  }
  if (!resident_ffn_layers.empty()) {
    char note[64];
    std::snprintf(note, sizeof(note), "(%zu layers kept in RAM, part of resident weights)", resident_ffn_layers.size());
    line(stream_attention ? "  of which whole layers" : "  of which dense FFN", resident_ffn_bytes, note);
  }
  if (repack_all_extra_bytes > 0) {
    char note[160];
    if (repacked_tensors.empty()) {
      std::snprintf(note, sizeof(note),
                    "(none: i-quant layouts repacked would take %.1f MiB more; --no-repack or budget)",
                    static_cast<double>(repack_all_extra_bytes) / kMiB);
    } else if (repack_extra_bytes == repack_all_extra_bytes) {
      std::snprintf(note, sizeof(note), "(%zu i-quant tensors in lookup-free layouts, part of resident weights)",
                    repacked_tensors.size());
    } else {
      std::snprintf(note, sizeof(note),
                    "(%zu i-quant tensors in lookup-free layouts; all of them would take %.1f MiB more)",
                    repacked_tensors.size(), static_cast<double>(repack_all_extra_bytes) / kMiB);
    }
    line("  of which repack", repack_extra_bytes, note);
  }
  if (stream_embeddings) line("token embeddings", 0, "(streamed: one row per token)");
  if (stream_per_layer_embeddings) line("per-layer embeddings", 0, "(streamed: one row per token)");
  if (stream_experts) {
    char note[128];
    std::snprintf(note, sizeof(note), "(%ld slots of %llu KiB; all experts: %llu MiB)",
                  static_cast<long>(n_expert_slots), static_cast<unsigned long long>(slot.slot_bytes / 1024),
                  static_cast<unsigned long long>(total_expert_bytes / kMiB));
    line("expert cache", expert_cache_bytes(), note);
  }
  if (stream_dense_ffn) {
    line("layer stream buffers", 2 * layer_buffer_bytes,
         stream_attention ? "(attention + FFN, double-buffered)" : "(FFN, double-buffered)");
  }
  line("total planned", planned_bytes());
  line("minimum budget", min_budget_bytes);
  return s;
}

namespace {

// The extra bytes of t in its repacked layout, or 0 when it has none or is not multiplied by
// matmul (token embeddings are read by rows, unless tied to the output head).
uint64_t repack_extra(const GgufTensorInfo& t, const ModelConfig& c) {
  const GgmlType to = repacked_type(t.type);
  if (to == t.type) return 0;
  if (t.name == kPerLayerTokenEmbdName || (t.name == kTokenEmbdName && !c.tied_embeddings)) return 0;
  const uint64_t rows = t.nbytes / t.row_bytes();
  const uint64_t bytes = rows * row_bytes(to, t.ne[0]);
  return bytes > t.nbytes ? bytes - t.nbytes : 0;
}

// Picks the tensors to repack with `room` bytes to spare: every candidate when they all fit,
// else those read every token (all but the routed experts) first, then experts, each in file
// order, as many as fit; none when `enabled` is false (only the cost is counted). Roles come from
// the blocks' tensor tables (`catalog`).
void plan_repack(const GgufFile& file, const ModelConfig& c, const TensorCatalog& catalog, uint64_t room, bool enabled,
                 MemoryPlan& p) {
  for (int pass = 0; pass < 2; ++pass) {
    for (const GgufTensorInfo& t : file.tensors()) {
      if (p.unloaded_tensors.count(t.name)) continue;
      const uint64_t extra = repack_extra(t, c);
      const TensorUse* u = catalog.find(t.name);
      const bool expert = u != nullptr && u->role == TensorRole::kExpert;
      if (extra == 0 || expert != (pass == 1)) continue;
      p.repack_all_extra_bytes += extra;
      if (!enabled || extra > room) continue;
      room -= extra;
      p.repack_extra_bytes += extra;
      p.repacked_tensors.insert(t.name);
    }
  }
  p.resident_weight_bytes += p.repack_extra_bytes;
}

}  // namespace

int64_t auto_checkpoint_count(uint64_t budget_bytes, int64_t n_sessions, uint64_t checkpoint_bytes) {
  if (checkpoint_bytes == 0) return 0;
  const uint64_t per_session = checkpoint_bytes * static_cast<uint64_t>(std::max<int64_t>(1, n_sessions));
  return static_cast<int64_t>(std::min<uint64_t>(kMaxAutoCheckpoints, budget_bytes / 8 / per_session));
}

Result<MemoryPlan> make_plan(const GgufFile& file, const ModelConfig& c, const PlanRequest& req) {
  MemoryPlan p;
  p.budget_bytes = req.budget_bytes;
  const bool serving = req.serve_experts_per_layer > 0 && c.is_moe();
  // A serving rank holds no session: one pass's scratch (rank 0's slots live on rank 0).
  p.n_sessions = serving ? 1 : std::max<int64_t>(1, req.n_sessions);
  const uint64_t sessions = static_cast<uint64_t>(p.n_sessions);
  // Each session's sequence state: KV rows of the attention layers (a window's ring for sliding
  // layers, nothing for shared-KV ones) and the recurrent layers' states.
  SNIPER_TRY(SequenceState::validate(layer_state_specs(c), req.n_ctx, req.kv_type));
  p.kv_bytes = serving ? 0 : sessions * SequenceState::bytes_for(layer_state_specs(c), req.n_ctx, req.kv_type);
  // Each session's state checkpoints (kv/state_checkpoints.h): what forgetting positions cannot
  // rewind, at most n_checkpoints copies; none for a model that can always rewind.
  const uint64_t one_checkpoint = SequenceState::checkpoint_bytes_for(layer_state_specs(c), req.n_ctx, req.kv_type);
  p.n_checkpoints = serving ? 0
                    : req.n_checkpoints == kAutoCheckpoints
                        ? auto_checkpoint_count(req.budget_bytes, p.n_sessions, one_checkpoint)
                        : std::max<int64_t>(0, req.n_checkpoints);
  p.checkpoint_bytes = sessions * static_cast<uint64_t>(p.n_checkpoints) * one_checkpoint;
  p.kv_config = req.kv_type;
  p.scratch_bytes =
      sessions * Transformer::estimate_scratch_bytes(c, std::min(req.batch, req.n_ctx), req.n_ctx, 2, req.n_logit_rows);
  if (req.load_mtp && c.n_nextn_layers > 0) {
    // The head's own KV and scratch, its recent hidden rows and the session's hidden rows.
    SNIPER_ASSIGN_OR_RETURN(const ModelConfig mc, mtp_config(c));
    const int64_t head_batch = std::min<int64_t>({req.batch, req.n_ctx, kMtpHeadBatch});
    p.kv_bytes += sessions * SequenceState::bytes_for(layer_state_specs(mc), req.n_ctx, req.kv_type);
    p.scratch_bytes += sessions * (Transformer::estimate_scratch_bytes(mc, head_batch, req.n_ctx, 2, 1) +
                                   static_cast<uint64_t>(kMtpHiddenRows + 3 * head_batch + req.batch) *
                                       static_cast<uint64_t>(c.dim) * sizeof(float));
  }
  if (req.batch_pass_rows > 0) {
    // Its logits: a row per session, or every verification row (n_logit_rows - 1 per session).
    const int64_t pass_logit_rows =
        std::min(req.batch_pass_rows, req.n_sessions * std::max<int64_t>(1, req.n_logit_rows - 1));
    p.batch_scratch_bytes = Transformer::estimate_scratch_bytes(c, req.batch_pass_rows, req.n_ctx, 2, pass_logit_rows);
  }
  // Code, libraries, tokenizer tables, metadata and I/O bookkeeping.
  p.overhead_bytes = 48 * kMiB + static_cast<uint64_t>(c.vocab_size) * 160 + file.data_offset;
  const uint64_t fixed = p.kv_bytes + p.checkpoint_bytes + p.scratch_bytes + p.batch_scratch_bytes + p.overhead_bytes;

  uint64_t total = 0, always = 0, embd = 0, attention = 0;
  std::vector<uint64_t> ffn_layer(static_cast<size_t>(c.n_layers), 0), attn_layer(static_cast<size_t>(c.n_layers), 0);
  uint64_t max_gate = 0, max_up = 0, max_down = 0;
  uint64_t per_layer_embd = 0;  // gemma4's per-layer embedding table (part of embd)
  const uint64_t n_exp = static_cast<uint64_t>(std::max<int64_t>(c.n_experts, 1));
  uint64_t mtp_expert_bytes = 0;  // the loaded MTP block's routed experts (they stream with the others)
  // Every tensor's role comes from the tables of the blocks that read it (model/tensor_catalog.h).
  const TensorCatalog catalog(c);
  for (const GgufTensorInfo& t : file.tensors()) {
    const TensorUse* u = catalog.find(t.name);
    if (u == nullptr || u->role == TensorRole::kUnread) {  // nothing reads it: not loaded
      p.unloaded_tensors.insert(t.name);
      continue;
    }
    // A serving rank reads only the routed experts and their layers' small tensors.
    if (serving && (u->role == TensorRole::kAttention || u->role == TensorRole::kEmbedding ||
                    u->role == TensorRole::kDenseFfn || t.name == kOutputName || u->block >= c.n_layers)) {
      p.unloaded_tensors.insert(t.name);
      continue;
    }
    const int64_t l = u->block;
    const TensorRole role = u->role;
    if (c.n_nextn_layers > 0 && l >= c.n_layers) {  // MTP blocks: the first when asked for
      if (!req.load_mtp || l != c.n_layers) {
        p.unloaded_tensors.insert(t.name);
        continue;
      }
      if (role != TensorRole::kExpert) {  // counted with the weights that never stream
        p.mtp_weight_bytes += t.nbytes;
        total += t.nbytes;
        always += t.nbytes;
        continue;
      }
      mtp_expert_bytes += t.nbytes;  // and below, as every routed expert
    }
    total += t.nbytes;
    switch (role) {
      case TensorRole::kAlways:
      case TensorRole::kUnread: always += t.nbytes; break;
      case TensorRole::kEmbedding:
        embd += t.nbytes;
        if (t.name == kPerLayerTokenEmbdName) per_layer_embd += t.nbytes;
        break;
      case TensorRole::kExpert:
        p.total_expert_bytes += t.nbytes;
        {
          // One expert's slice: a packed file's whole tensor, else 1/n_experts of the 3-D one. A
          // fused gate_up slice takes the gate region (the cache reads both halves into it and
          // the up region, which are adjacent).
          const uint64_t slice = u->expert >= 0 ? t.nbytes : t.nbytes / n_exp;
          switch (u->part) {
            case ExpertPart::kGate:
            case ExpertPart::kGateUp: max_gate = std::max(max_gate, slice); break;
            case ExpertPart::kUp: max_up = std::max(max_up, slice); break;
            case ExpertPart::kDown: max_down = std::max(max_down, slice); break;
            case ExpertPart::kNone: break;
          }
        }
        break;
      case TensorRole::kDenseFfn:
        if (l >= 0 && l < c.n_layers) ffn_layer[static_cast<size_t>(l)] += t.nbytes + 2 * kPage;
        break;
      case TensorRole::kAttention:
        attention += t.nbytes;
        if (l >= 0 && l < c.n_layers) attn_layer[static_cast<size_t>(l)] += t.nbytes + 2 * kPage;
        break;
    }
  }
  const uint64_t dense_ffn_total = total - always - embd - attention - p.total_expert_bytes;

  p.all_resident_bytes = fixed + total;
  if (!serving && !req.force_stream && fixed + total <= req.budget_bytes) {
    p.all_resident = true;
    p.resident_weight_bytes = total;
    p.mtp_weight_bytes += mtp_expert_bytes;
    p.min_budget_bytes = fixed + total;
    plan_repack(file, c, catalog, req.budget_bytes - (fixed + total), req.repack, p);
    return p;
  }

  // Something streams. The output head is needed in full every token: when the embeddings are
  // tied to it they stay resident, otherwise they are read one row per token.
  p.stream_embeddings = !c.tied_embeddings && !serving;
  // A per-layer embedding table is no output head: it is read by rows whenever something streams.
  p.stream_per_layer_embeddings = per_layer_embd > 0 && !serving;
  const uint64_t always_bytes = always + attention + (p.stream_embeddings ? 0 : embd - per_layer_embd);
  if (p.stream_embeddings) p.streamed_tensors.insert(kTokenEmbdName);
  if (p.stream_per_layer_embeddings) p.streamed_tensors.insert(kPerLayerTokenEmbdName);

  if (c.is_moe()) {
    p.stream_experts = true;
    // Slot regions: the largest slice of each kind plus the widening of its O_DIRECT read.
    p.slot.gate_bytes = round_up(max_gate, kPage) + 2 * kPage;
    p.slot.up_bytes = round_up(max_up, kPage) + 2 * kPage;
    p.slot.down_bytes = round_up(max_down, kPage) + 2 * kPage;
    p.slot.slot_bytes = p.slot.gate_bytes + p.slot.up_bytes + p.slot.down_bytes;
    p.resident_weight_bytes = always_bytes + dense_ffn_total;  // dense layers of an MoE model stay resident
    const int64_t min_slots = c.n_experts_active + 2;
    p.min_budget_bytes = fixed + p.resident_weight_bytes + p.slot.slot_bytes * static_cast<uint64_t>(min_slots);
    if (req.budget_bytes < p.min_budget_bytes) {
      return make_error(
          "the memory budget %s is below the minimum %s for this model (KV %s, scratch %s, resident "
          "weights %s, %ld expert slots of %s)",
          format_bytes(req.budget_bytes).c_str(), format_bytes(p.min_budget_bytes).c_str(),
          format_bytes(p.kv_bytes).c_str(), format_bytes(p.scratch_bytes).c_str(),
          format_bytes(p.resident_weight_bytes).c_str(), static_cast<long>(min_slots),
          format_bytes(p.slot.slot_bytes).c_str());
    }
    const uint64_t room = req.budget_bytes - fixed - p.resident_weight_bytes;
    p.mtp_streamed_expert_bytes = mtp_expert_bytes;
    p.n_expert_layers = c.n_layers + (mtp_expert_bytes > 0 ? 1 : 0);
    const int64_t all_slots =
        p.n_expert_layers * (serving ? std::min(req.serve_experts_per_layer, c.n_experts) : c.n_experts);
    p.n_expert_slots = std::min<int64_t>(static_cast<int64_t>(room / p.slot.slot_bytes), all_slots);
    for (const TensorUse& u : catalog.uses()) {
      if (u.role == TensorRole::kExpert && u.block < p.n_expert_layers && file.find_tensor(u.name) != nullptr) {
        p.streamed_tensors.insert(u.name);
      }
    }
    return p;
  }

  // Dense: stream the FFN weights layer by layer; if that is still too much, attention too.
  p.stream_dense_ffn = true;
  const uint64_t max_ffn = *std::max_element(ffn_layer.begin(), ffn_layer.end());
  uint64_t max_both = 0;
  for (size_t l = 0; l < ffn_layer.size(); ++l) max_both = std::max(max_both, ffn_layer[l] + attn_layer[l]);
  const uint64_t need_ffn = fixed + always_bytes + 2 * max_ffn;
  const uint64_t need_both = fixed + always_bytes - attention + 2 * max_both;
  p.min_budget_bytes = std::min(need_ffn, need_both);
  // Room left after the two buffers keeps whole layers resident (their FFN, and their mixer
  // weights when those stream too), spread evenly over the depth so that the streamed layers'
  // reads overlap the resident layers' compute. With streaming forced, at least one layer still
  // streams.
  auto keep_layers = [&](uint64_t room, bool with_mixers) {
    const int64_t n_layers = c.n_layers;
    for (int64_t k = req.force_stream ? n_layers - 1 : n_layers; k > 0; --k) {
      std::vector<int64_t> pick;
      uint64_t bytes = 0;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t l = (2 * i + 1) * n_layers / (2 * k);
        pick.push_back(l);
        bytes += ffn_layer[static_cast<size_t>(l)] + (with_mixers ? attn_layer[static_cast<size_t>(l)] : 0);
      }
      if (bytes > room) continue;
      p.resident_ffn_layers = pick;
      p.resident_ffn_bytes = bytes;
      p.resident_weight_bytes += bytes;
      return;
    }
  };
  if (need_ffn <= req.budget_bytes) {
    p.resident_weight_bytes = always_bytes;
    p.layer_buffer_bytes = max_ffn;
    keep_layers(req.budget_bytes - need_ffn, /*with_mixers=*/false);
  } else if (need_both <= req.budget_bytes) {
    p.stream_attention = true;
    p.resident_weight_bytes = always_bytes - attention;
    p.layer_buffer_bytes = max_both;
    keep_layers(req.budget_bytes - need_both, /*with_mixers=*/true);
  } else {
    return make_error(
        "the memory budget %s is below the minimum %s for this model (KV %s, scratch %s, "
        "norms and output head %s, two layer buffers of %s)",
        format_bytes(req.budget_bytes).c_str(), format_bytes(p.min_budget_bytes).c_str(),
        format_bytes(p.kv_bytes).c_str(), format_bytes(p.scratch_bytes).c_str(),
        format_bytes(always_bytes - attention).c_str(), format_bytes(max_both).c_str());
  }
  for (const TensorUse& u : catalog.uses()) {
    const bool kept =
        std::find(p.resident_ffn_layers.begin(), p.resident_ffn_layers.end(), u.block) != p.resident_ffn_layers.end();
    if (!kept && u.block >= 0 && u.block < c.n_layers && file.find_tensor(u.name) != nullptr &&
        (u.role == TensorRole::kDenseFfn || (p.stream_attention && u.role == TensorRole::kAttention))) {
      p.streamed_tensors.insert(u.name);
    }
  }
  return p;
}

Result<uint64_t> resolve_memory_budget(const std::string& text) {
  if (text == "auto") {
    const MemoryLimit limit = detect_memory_limit();
    if (limit.limit_bytes == kNoMemoryLimit) return make_error("--mem auto: no memory limit or MemAvailable found");
    // Headroom for what we do not plan: other processes' pages, allocator slack.
    const uint64_t headroom = std::clamp<uint64_t>(limit.limit_bytes / 32, 64 * kMiB, 1024 * kMiB);
    if (limit.limit_bytes <= headroom)
      return make_error("--mem auto: only %s available", format_bytes(limit.limit_bytes).c_str());
    return limit.limit_bytes - headroom;
  }
  auto v = parse_size(text);
  if (!v.ok()) return make_error("--mem: %s", v.error().message.c_str());
  if (*v < 16 * kMiB) return make_error("--mem is %s but must be at least 16 MiB", text.c_str());
  return *v;
}

}  // namespace sniper
