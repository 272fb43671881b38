// SPDX-License-Identifier: MIT
// Flags and helpers shared by the CLI commands that load a model.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "args.h"
#include "engine/model.h"
#include "engine/session.h"
#include "media/mmproj.h"
#include "sampling/sampler.h"

namespace sniper::cli {

// -m, -hf, -t, --ctx, --batch; KV cache (--kv-type, -ctk, -ctv, -fa, --no-kv-rotation); memory and
// I/O (--mem, --residency, --no-mmap, --mlock, ...); llama.cpp spellings accepted for habit (-ngl, --jinja)
std::vector<FlagSpec> model_flags();
// --temp, --seed, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, --presence-penalty, --frequency-penalty
std::vector<FlagSpec> sampling_flags();
// --context-shift, --keep
std::vector<FlagSpec> context_shift_flags();
std::vector<FlagSpec> concat(std::vector<FlagSpec> a, const std::vector<FlagSpec>& b);

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<RemoteExperts> remote_experts;  // under mpirun: the other ranks' experts (before session:
                                                  // it must outlive it)
  std::unique_ptr<Session> session;
  std::string path;                // the model file (first part of a split set)
  std::unique_ptr<Mmproj> mmproj;  // with --mmproj (media_args.h), else null
};

// One line on stderr for each llama.cpp flag accepted but ignored here (-ngl).
void print_compat_notes(const Args& args);
// --mlock: locks every page the process holds now (weights, caches, buffers) in RAM, and with
// `future` every page it maps later too (a server whose models load on demand); a warning on
// stderr names the reason (and 'ulimit -l') when the kernel refuses.
void lock_memory_if_asked(const Args& args, bool future = false);

// Takes reserved_bytes (a draft model's --mem-draft; 0: none) off *mem_bytes (0: unlimited, left
// so). An Error, *mem_bytes unchanged, when it is not below the budget.
[[nodiscard]] Status reserve_draft_share(uint64_t reserved_bytes, uint64_t* mem_bytes);
// n_checkpoints: state checkpoints the session keeps (and the plan counts) for prefix reuse, or
// kAutoCheckpoints (the plan's choice). reserved_bytes: taken off --mem for something else (a
// draft model's --mem-draft); an Error when it is not below the budget. n_logit_rows: rows of
// logits the session and its caller hold at once (PlanRequest::n_logit_rows). With --mmproj (commands
// that take media_flags()), the projector is planned beside the model and loaded too.
Result<Loaded> load_model_and_session(const Args& args, int64_t n_checkpoints = 0, uint64_t reserved_bytes = 0,
                                      int64_t n_logit_rows = 1, bool load_mtp = false);
// --ctx-checkpoints N|auto: N in [0, 256], or kAutoCheckpoints. Errors name the value.
Result<int64_t> parse_checkpoint_count(const std::string& text);
// The model_flags() as ModelLoadOptions (budget resolved, enums parsed).
Result<ModelLoadOptions> load_options_from_args(const Args& args);
Result<SamplerConfig> sampler_from_args(const Args& args);
// --kv-type (both), then -ctk / -ctv, -fa and --no-kv-rotation, validated (validate_kv_config).
Result<KvConfig> kv_config_from_args(const Args& args);
// "KEEP:WINDOW" or "auto" (keep half the active experts, window twice as many).
Result<RoutingBias> parse_routing_bias(const std::string& text, const ModelConfig& config);

// --context-shift and --keep N (-1 = the whole prompt) into `go` (the raw --keep; callers
// resolve it against their prompt with resolve_n_keep). Refuses --context-shift for a model
// whose state cannot shift (context_shift_support). Errors name the flag and the value.
[[nodiscard]] Result<int64_t> context_shift_from_args(const Args& args, const ModelConfig& config, bool* on);

// Reads a whole file; an Error names the path.
Result<std::string> read_file(const std::string& path);
// Parses a JSON array of integers (token ids).
Result<std::vector<int32_t>> parse_id_list(const std::string& json_text, const std::string& what);

// Rows of cells as aligned columns (3 spaces apart, no trailing spaces); columns whose index is in
// `right_aligned` are right-aligned. Every row ends in a newline.
std::string format_table(const std::vector<std::vector<std::string>>& rows,
                         const std::vector<size_t>& right_aligned = {});

// Seconds on the steady clock (for timing the commands' phases).
double now_s();

// Prints "error: <message>" to stderr and returns exit code 1.
int fail(const Error& error);

}  // namespace sniper::cli
