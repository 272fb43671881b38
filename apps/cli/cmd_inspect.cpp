// SPDX-License-Identifier: MIT
// sniper inspect MODEL: architecture, config, tensor shapes and types (with the role the blocks'
// tables give each, model/tensor_table.h), a quant histogram and the byte breakdown streaming
// lives by: always-needed bytes (attention, norms, router, embeddings, output head) vs
// routed-expert bytes vs dense FFN bytes, per layer and in total; and the tensors no block reads.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "engine/plan.h"
#include "engine/prefill_chunk.h"
#include "gguf/reader.h"
#include "gguf/split.h"
#include "hub_model.h"
#include "media_args.h"
#include "model/config.h"
#include "model/tensor_catalog.h"
#include "spec_args.h"

namespace sniper::cli {

namespace {

// Columns of the byte table: always-needed (attention counts here), experts, dense FFN, and
// tensors nothing reads (unclaimed or unread).
int byte_column(const TensorUse* u) {
  if (u == nullptr) return 3;
  switch (u->role) {
    case TensorRole::kExpert: return 1;
    case TensorRole::kDenseFfn: return 2;
    case TensorRole::kUnread: return 3;
    default: return 0;
  }
}

std::string human(uint64_t bytes) {
  char buf[64];
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(bytes) / 1024);
  }
  return buf;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--model", "-m", "PATH|NAME", "the model, if not given as the first word: a GGUF file or a store name"},
      {"--tensors", nullptr, nullptr, "list every tensor"},
      {"--metadata", nullptr, nullptr, "list every metadata key"},
      {"--plan", nullptr, nullptr, "print the memory plan: what stays in RAM, what streams"},
      {"--mem", nullptr, "SIZE|auto", "memory budget for --plan (default auto)"},
      {"--ctx", "-c", "N", "context size for --plan (default min(model, 4096))", nullptr, "--ctx-size"},
      {"--batch", nullptr, "N|auto", "prefill chunk for --plan (default auto, as run/bench choose it)"},
      {"--slots", "-np", "N",
       "server slots for --plan, as `serve --slots` (a KV cache and scratch each, and the batched pass over them)"},
      {"--kv-type", nullptr, "TYPE", "KV cache type of K and V for --plan (default f16)"},
      {"--cache-type-k", "-ctk", "TYPE", "K cache type for --plan"},
      {"--cache-type-v", "-ctv", "TYPE", "V cache type for --plan"},
      {"--flash-attn", "-fa", "on|off|auto", "flash attention for --plan (decides V's layout)"},
      {"--no-kv-rotation", nullptr, nullptr, "(accepted for symmetry with run; no effect on the plan)"},
      {"--no-repack", nullptr, nullptr, "plan without the lookup-free layouts of i-quant weights, as run --no-repack"},
      {"--ctx-checkpoints", nullptr, "N|auto",
       "state checkpoints per session for --plan, as `serve --ctx-checkpoints` (default 0)"},
      {"--spec-type", nullptr, "none|ngram|draft|mtp",
       "speculative decoding for --plan, as run takes it: mtp loads the "
       "model's MTP head (the others leave the target's plan as it is)"},
      {"--mmproj", nullptr, "PATH",
       "multimodal projector for --plan: its share of the budget (resident or streamed layers) comes first"},
      {"--image-min-tokens", nullptr, "N", "fewest tokens an image is resized to, for --plan --mmproj"},
      {"--image-max-tokens", nullptr, "N", "most tokens an image is resized to, for --plan --mmproj"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("inspect", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("inspect", "MODEL [--tensors] [--metadata] [--plan --mem SIZE]", specs,
                "Describes a GGUF model: architecture, shapes, quant types and the bytes by role per layer; --plan "
                "shows what stays in RAM and what streams under a budget. MODEL is a file or a store name.");
    return 0;
  }
  auto model_path = model_path_from_args(*args);
  if (!model_path.ok()) return fail(model_path.error());
  const std::string path = *model_path;
  auto file = gguf_open_model(path);
  if (!file.ok()) return fail(file.error());
  std::printf("file: %s (%llu bytes, GGUF v%u, %zu tensors, %zu metadata keys, alignment %llu)\n", path.c_str(),
              static_cast<unsigned long long>(file->file_size), file->version, file->tensors().size(),
              file->metadata().size(), static_cast<unsigned long long>(file->alignment));
  auto config = load_model_config(*file);
  if (config.ok()) {
    const ModelConfig& c = *config;
    std::printf("architecture: %s%s%s\n", c.arch.c_str(), c.name.empty() ? "" : " | name: ", c.name.c_str());
    std::printf("dim %ld | layers %ld | heads %ld (kv %ld) | head_dim %ld | ffn %ld | vocab %ld | context %ld\n",
                static_cast<long>(c.dim), static_cast<long>(c.n_layers), static_cast<long>(c.n_heads),
                static_cast<long>(c.n_kv_heads), static_cast<long>(c.head_dim), static_cast<long>(c.hidden_dim),
                static_cast<long>(c.vocab_size), static_cast<long>(c.n_ctx_train));
    std::printf("rope: %s, base %g, dims %ld | rms eps %g%s%s\n", c.rope_style == RopeStyle::kNorm ? "norm" : "neox",
                static_cast<double>(c.rope_base), static_cast<long>(c.rope_dims), static_cast<double>(c.norm_eps),
                c.qk_norm ? " | q/k norm" : "", c.qkv_bias ? " | qkv bias" : "");
    if (c.is_moe()) {
      std::printf("experts: %ld, %ld active per token, expert ffn %ld\n", static_cast<long>(c.n_experts),
                  static_cast<long>(c.n_experts_active), static_cast<long>(c.expert_hidden_dim));
    }
    if (c.shared_expert_hidden_dim > 0)
      std::printf("shared expert ffn %ld\n", static_cast<long>(c.shared_expert_hidden_dim));
    // The layer plan, runs of equal layers merged: "0-2 delta-net + moe+shared, 3 attention(gated) + moe+shared".
    auto describe = [&](int64_t l) {
      const LayerPlan& lp = c.layer(l);
      std::string d = mixer_kind_name(lp.mixer);
      if (lp.mixer == MixerKind::kAttention && lp.attn_output_gate) d += "(gated)";
      if (lp.mixer == MixerKind::kAttention && lp.sliding_window > 0)
        d += "(window " + std::to_string(lp.sliding_window) + ")";
      if (lp.mixer == MixerKind::kAttention && lp.kv_shared_with >= 0)
        d += "(kv of " + std::to_string(lp.kv_shared_with) + ")";
      d += std::string(" + ") + ffn_kind_name(lp.ffn) + (lp.shared_expert != SharedExpert::kNone ? "+shared" : "");
      return d;
    };
    std::string plan;
    for (int64_t l = 0; l < c.n_layers;) {
      int64_t end = l + 1;
      while (end < c.n_layers && describe(end) == describe(l)) ++end;
      plan += (plan.empty() ? "" : ", ") + std::to_string(l) + (end - l > 1 ? "-" + std::to_string(end - 1) : "") +
              " " + describe(l);
      l = end;
    }
    std::printf("layers: %s\n", plan.c_str());
    if (c.delta_net.n_v_heads > 0) {
      const DeltaNetConfig& d = c.delta_net;
      std::printf("delta-net: %ld key / %ld value heads of %ld (%s), conv %ld\n", static_cast<long>(d.n_k_heads),
                  static_cast<long>(d.n_v_heads), static_cast<long>(d.head_dim), d.grouped_heads ? "grouped" : "tiled",
                  static_cast<long>(d.conv_kernel));
    }
  } else {
    std::printf("config: not runnable: %s\n", config.error().message.c_str());
  }
  if (args->has("--metadata")) {
    std::printf("\nmetadata:\n");
    for (const auto& [key, value] : file->metadata()) {
      std::printf("  %-44s %s\n", key.c_str(), value.to_display_string().c_str());
    }
  }
  // Each tensor's role and layer, from the tables of the blocks that read it (none when the
  // config is not runnable: every tensor is then unclassified).
  std::optional<TensorCatalog> catalog;
  if (config.ok()) catalog.emplace(*config);
  std::map<std::string, std::pair<int, uint64_t>> histogram;
  std::map<int, std::array<uint64_t, 4>> per_layer;
  std::array<uint64_t, 4> total{0, 0, 0, 0};
  std::vector<std::string> unclaimed;
  if (args->has("--tensors")) std::printf("\ntensors:\n");
  for (const GgufTensorInfo& t : file->tensors()) {
    auto& h = histogram[get_type_info(t.type).name];
    h.first++;
    h.second += t.nbytes;
    const TensorUse* u = catalog ? catalog->find(t.name) : nullptr;
    if (u == nullptr) unclaimed.push_back(t.name);
    const int cls = byte_column(u);
    per_layer[u != nullptr ? static_cast<int>(u->block) : -1][static_cast<size_t>(cls)] += t.nbytes;
    total[static_cast<size_t>(cls)] += t.nbytes;
    if (args->has("--tensors")) {
      std::printf("  %-36s %-7s [%ld, %ld, %ld, %ld] %10s  %s\n", t.name.c_str(), get_type_info(t.type).name,
                  static_cast<long>(t.ne[0]), static_cast<long>(t.ne[1]), static_cast<long>(t.ne[2]),
                  static_cast<long>(t.ne[3]), human(t.nbytes).c_str(),
                  u != nullptr ? tensor_role_name(u->role) : "unclaimed");
    }
  }
  std::printf("\ntensor types:\n");
  for (const auto& [name, h] : histogram) {
    std::printf("  %-7s %5d tensors  %s\n", name.c_str(), h.first, human(h.second).c_str());
  }
  std::printf(
      "\nbytes by role (always = attention, norms, router, embeddings, output head; unread = no block reads it):\n");
  std::printf("  %-8s %14s %14s %14s %14s\n", "layer", "always", "experts", "dense ffn", "unread");
  for (const auto& [layer, b] : per_layer) {
    std::printf("  %-8s %14s %14s %14s %14s\n", layer < 0 ? "global" : std::to_string(layer).c_str(),
                human(b[0]).c_str(), human(b[1]).c_str(), human(b[2]).c_str(), human(b[3]).c_str());
  }
  std::printf("  %-8s %14s %14s %14s %14s\n", "total", human(total[0]).c_str(), human(total[1]).c_str(),
              human(total[2]).c_str(), human(total[3]).c_str());
  std::printf("  (bytes: always %llu, experts %llu, dense ffn %llu, unread %llu)\n",
              static_cast<unsigned long long>(total[0]), static_cast<unsigned long long>(total[1]),
              static_cast<unsigned long long>(total[2]), static_cast<unsigned long long>(total[3]));
  if (catalog) {
    std::printf("\nunclaimed tensors (no block's table reads them; not loaded): %zu\n", unclaimed.size());
    for (const std::string& name : unclaimed) std::printf("  %s\n", name.c_str());
  }
  if (args->has("--plan")) {
    if (!config.ok()) return fail(config.error());
    auto budget = resolve_memory_budget(args->get_string("--mem", "auto"));
    if (!budget.ok()) return fail(budget.error());
    PlanRequest req;
    req.budget_bytes = *budget;
    auto ctx = args->get_int("--ctx", std::min<int64_t>(config->n_ctx_train, 4096), 1, int64_t{1} << 24);
    if (!ctx.ok()) return fail(ctx.error());
    req.n_ctx = *ctx;
    const bool auto_batch = args->get_string("--batch", "auto") == "auto";
    if (!auto_batch) {
      auto batch = args->get_int("--batch", 64, 1, 4096);
      if (!batch.ok()) return fail(make_error("%s, or auto", batch.error().message.c_str()));
      req.batch = *batch;
    }
    auto kv = kv_config_from_args(*args);
    if (!kv.ok()) return fail(kv.error());
    req.kv_type = *kv;
    const bool serving = args->has("--slots");
    if (serving) {
      auto slots = args->get_int("--slots", 1, 1, 256);
      if (!slots.ok()) return fail(slots.error());
      req.n_sessions = *slots;
    }
    auto checkpoints = parse_checkpoint_count(args->get_string("--ctx-checkpoints", "0"));
    if (!checkpoints.ok()) return fail(checkpoints.error());
    req.n_checkpoints = *checkpoints;
    auto spec = parse_spec_kind(args->get_string("--spec-type", "none"));
    if (!spec.ok()) return fail(spec.error());
    if (*spec == SpecKind::kMtp) {
      if (Status st = check_mtp_supported(*file, *config); !st.ok()) return fail(st.error());
    }
    req.load_mtp = *spec == SpecKind::kMtp;
    req.repack = !args->has("--no-repack");
    // With a projector, as run plans it (media_args.cpp): its share comes off the budget first, and
    // an image that attends both ways runs in one forward (the chunk and the sliding rings widen).
    std::optional<MediaPlan> media;
    int64_t media_tokens = 0;
    if (args->has("--mmproj")) {
      const std::string mm_path = args->get_string("--mmproj");
      auto mo = mmproj_options_from_args(*args);
      if (!mo.ok()) return fail(mo.error());
      auto mem = mmproj_memory(mm_path, *mo);
      if (!mem.ok()) return fail(make_error("%s: %s", mm_path.c_str(), mem.error().message.c_str()));
      auto tokens = media_chunk_tokens_of(mm_path, *mo);
      if (!tokens.ok()) return fail(tokens.error());
      media_tokens = *tokens;
      if (media_tokens > 0) widen_rings_for_chunks(*config, media_tokens);
      PlanRequest mreq = req;
      mreq.batch = std::max(auto_batch ? kShortPromptChunk : req.batch, media_tokens);
      auto mp = plan_media(*file, *config, mreq, *mem);
      if (!mp.ok()) return fail(mp.error());
      req.budget_bytes -= mp->projector_bytes;
      media = std::move(mp).value();
    }
    Result<MemoryPlan> plan = make_error("no plan");
    if (serving) {  // as serve plans: short chunks by default, and the batched pass's rows
      if (auto_batch) req.batch = std::max(kShortPromptChunk, media_tokens);
      req.batch_pass_rows = std::max(req.batch, media_tokens) + req.n_sessions;
    }
    if (auto_batch && !serving) {
      auto choice = choose_prefill_chunk(*file, *config, req);
      if (!choice.ok()) return fail(choice.error());
      req.batch = choice->batch;
      plan = std::move(choice->plan);
      if (req.batch < media_tokens) {
        req.batch = media_tokens;  // an image's chunk runs in one forward
        plan = make_plan(*file, *config, req);
      }
    } else {
      req.batch = std::max(req.batch, media_tokens);
      plan = make_plan(*file, *config, req);
    }
    if (!plan.ok()) return fail(plan.error());
    std::printf("\n%s", plan->describe().c_str());
    std::printf("  prefill chunk %ld tokens%s%s\n", static_cast<long>(req.batch), auto_batch ? " (--batch auto)" : "",
                req.batch == media_tokens && media_tokens > 0 ? " (an image's tokens, in one forward)" : "");
    if (media) std::printf("%s", media->describe().c_str());
  }
  return 0;
}

}  // namespace sniper::cli
