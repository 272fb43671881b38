// SPDX-License-Identifier: MIT
#include "common.h"

#include "model/context_shift.h"

#include <sys/mman.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/memory_limit.h"
#include "cluster_args.h"
#include "hub_model.h"
#include "media_args.h"
#include "progress.h"

namespace sniper::cli {

std::vector<FlagSpec> model_flags() {
  std::vector<FlagSpec> model = in_group(
      "Model",
      {
          {"--model", "-m", "PATH|NAME",
           "GGUF file (the first part of a split set) or a store name OWNER/NAME[:QUANT], pulled if needed; the "
           "model may also be given as the first word after the command"},
          {"--hf-repo", "-hf", "REPO[:QUANT]",
           "model from a Hugging Face-compatible hub, pulled into the store if needed (see sniper pull)", nullptr,
           "--hf"},
          {"--threads", "-t", "N", "threads (default: all cores)"},
          {"--ctx", "-c", "N", "context size in tokens (default: min(model, 4096))", nullptr, "--ctx-size"},
          {"--batch", "-b", "N|auto",
           "prompt chunk size (default auto: 512 when every weight stays in RAM; when weights stream, the longest "
           "chunk up to 4096 whose scratch takes at most 1/8 of --mem and leaves two layers of expert slots, else 64)",
           nullptr, "--batch-size -ub --ubatch-size"},
      });
  std::vector<FlagSpec> kv = in_group(
      "KV cache",
      {
          {"--kv-type", nullptr, "TYPE", "KV cache type for K and V (shorthand for -ctk TYPE -ctv TYPE; default f16)"},
          {"--cache-type-k", "-ctk", "TYPE",
           "K cache type: f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 (default f16)"},
          {"--cache-type-v", "-ctv", "TYPE",
           "V cache type, as -ctk; a quantized V needs flash attention (default f16)"},
          {"--flash-attn", "-fa", "on|off|auto",
           "flash attention (default auto: on when the V cache is quantized, else off)"},
          {"--no-kv-rotation", nullptr, nullptr,
           "do not Hadamard-rotate quantized K/V (llama.cpp's LLAMA_ATTN_ROT_DISABLE=1)"},
      });
  std::vector<FlagSpec> memory = in_group(
      "Memory and I/O",
      {
          {"--mem", nullptr, "SIZE|auto",
           "memory budget, e.g. 8G, 512M, auto = cgroup limit or MemAvailable (default auto)"},
          {"--residency", nullptr, "auto|resident|mmap|stream",
           "where weights live (default auto: resident if they fit --mem, else the rest streams from the SSD)"},
          {"--no-mmap", nullptr, nullptr,
           "never memory-map the weights (the default already reads them into RAM or streams them; refuses "
           "--residency mmap)"},
          {"--mlock", nullptr, nullptr,
           "lock the loaded weights, caches and buffers in RAM so the kernel never pages them out (needs a high "
           "enough 'ulimit -l'; a warning says when it fails)"},
          {"--no-repack", nullptr, nullptr,
           "keep i-quant weights in their file layout (default: when every weight stays in RAM and --mem has room, "
           "IQ1_*/IQ2_*/IQ3_*/TQ1_0 load into larger lookup-free layouts; same results, faster kernels)"},
          {"--cache-policy", nullptr, "lru|lfru", "expert cache eviction (default lfru)"},
          {"--no-prefetch", nullptr, nullptr, "do not prefetch predicted experts"},
          {"--prefetch-depth", nullptr, "N",
           "layers ahead to prefetch predicted experts (default 1; deeper guesses were right only half the time on "
           "the 30B)"},
          {"--io", nullptr, "auto|uring|pread", "I/O backend for streaming (default auto)"},
          {"--io-depth", nullptr, "N", "reads in flight (default 32)"},
          {"--buffered-io", nullptr, nullptr, "read with the page cache (posix_fadvise DONTNEED) instead of O_DIRECT"},
          {"--routing-bias", nullptr, "KEEP:WINDOW|auto",
           "opt-in cache-aware routing (changes outputs): keep the true top-KEEP experts, fill the rest from cached "
           "ones in the top-WINDOW"},
      });
  std::vector<FlagSpec> compat = in_group(
      kCompatGroup,
      {
          {"--n-gpu-layers", "-ngl", "N",
           "ignored with a note: Sniper runs on the CPU and has no GPU backend (--mem decides what stays in RAM)",
           nullptr, "--gpu-layers"},
          {"--jinja", nullptr, nullptr, "no effect: chat templates always run through Sniper's Jinja interpreter"},
      });
  std::vector<FlagSpec> dist =
      in_group("Several machines (under mpirun)",
               {
                   {"--distribute", nullptr, "experts|layers|auto",
                    "how ranks share the model under 'mpirun -np W': experts = routed experts divided among ranks (MoE "
                    "models); layers = pipeline (not built yet); auto = experts for MoE models (default auto)"},
                   {"--rank-timeout", nullptr, "SECONDS",
                    "the longest rank 0 waits for another rank before failing the request with an error naming it "
                    "(default 60)"},
               });
  return concat(concat(concat(concat(model, kv), memory), dist), compat);
}

std::vector<FlagSpec> sampling_flags() {
  return in_group("Sampling",
                  {
                      {"--temp", nullptr, "T", "temperature; 0 = greedy (default 0.8)", nullptr, "--temperature"},
                      {"--seed", "-s", "S", "random seed (default 0)"},
                      {"--top-k", nullptr, "K", "top-k, 0 = off (default 40)"},
                      {"--top-p", nullptr, "P", "top-p (default 0.95)"},
                      {"--min-p", nullptr, "P", "min-p (default 0.05)"},
                      {"--repeat-penalty", nullptr, "X", "repetition penalty, 1 = off (default 1)"},
                      {"--repeat-last-n", nullptr, "N", "tokens the penalties look back over (default 64)"},
                      {"--presence-penalty", nullptr, "X", "presence penalty (default 0)"},
                      {"--frequency-penalty", nullptr, "X", "frequency penalty (default 0)"},
                  });
}

std::vector<FlagSpec> context_shift_flags() {
  return in_group("Context", {
                                 {"--context-shift", nullptr, nullptr,
                                  "when the context is full, keep the first --keep tokens, drop half of the rest and "
                                  "go on (llama.cpp's context shift; off: a full context ends generation)"},
                                 {"--keep", nullptr, "N",
                                  "tokens of the prompt kept by --context-shift, plus BOS; -1 = the whole prompt "
                                  "(default 0)"},
                             });
}

Result<int64_t> context_shift_from_args(const Args& args, const ModelConfig& config, bool* on) {
  *on = args.has("--context-shift");
  auto keep = args.get_int("--keep", 0, -1, int64_t{1} << 24);
  if (!keep.ok()) return keep.error();
  if (*on) SNIPER_TRY(context_shift_support(config));
  return *keep;
}

std::vector<FlagSpec> concat(std::vector<FlagSpec> a, const std::vector<FlagSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Status reserve_draft_share(uint64_t reserved_bytes, uint64_t* mem_bytes) {
  if (reserved_bytes == 0 || *mem_bytes == 0) return ok_status();
  if (reserved_bytes >= *mem_bytes) {
    return make_error("--mem-draft (%.1f MiB) must be below --mem (%.1f MiB): the draft's share comes off the budget",
                      static_cast<double>(reserved_bytes) / 1048576.0, static_cast<double>(*mem_bytes) / 1048576.0);
  }
  *mem_bytes -= reserved_bytes;
  return ok_status();
}

void print_compat_notes(const Args& args) {
  if (args.has("--n-gpu-layers")) {
    std::fprintf(stderr,
                 "note: %s is ignored: Sniper runs on the CPU and has no GPU backend (--mem sets what stays in "
                 "RAM)\n",
                 args.spelling("--n-gpu-layers").c_str());
  }
}

void lock_memory_if_asked(const Args& args, bool future) {
  if (!args.has("--mlock")) return;
  if (mlockall(MCL_CURRENT | (future ? MCL_FUTURE : 0)) != 0) {
    const int err = errno;
    rlimit lim{};
    getrlimit(RLIMIT_MEMLOCK, &lim);
    std::fprintf(
        stderr,
        "warning: --mlock: cannot lock the model in RAM (%s; 'ulimit -l' allows %s): it may be paged out "
        "under memory pressure\n",
        std::strerror(err),
        lim.rlim_cur == RLIM_INFINITY ? "unlimited" : format_bytes(static_cast<uint64_t>(lim.rlim_cur)).c_str());
  }
}

Result<Loaded> load_model_and_session(const Args& args, int64_t n_checkpoints, uint64_t reserved_bytes,
                                      int64_t n_logit_rows, bool load_mtp) {
  // Under mpirun, a rank that fails before its model loads still takes part in the start-up
  // agreement, so every rank stops at once and rank 0 names it.
  auto early = [&](const Error& e) -> Error {
    if (Cluster* cluster = current_cluster(); cluster != nullptr) refuse_start(*cluster, e.message);
    return e;
  };
  auto files = model_files_from_args(args);
  if (!files.ok()) return early(files.error());
  const std::string model_path = files->model;
  auto options = load_options_from_args(args);
  if (!options.ok()) return early(options.error());
  ModelLoadOptions lo = *options;
  if (Status st = reserve_draft_share(reserved_bytes, &lo.mem_bytes); !st.ok()) return early(st.error());
  print_compat_notes(args);
  lo.n_checkpoints = n_checkpoints;
  lo.n_logit_rows = n_logit_rows;
  lo.load_mtp = load_mtp;
  SessionOptions so;
  auto threads = args.get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return early(threads.error());
  so.n_threads = static_cast<int>(*threads);
  so.n_ctx = lo.n_ctx;
  so.kv_type = lo.kv_type;
  Loaded out;
  auto mmproj = load_mmproj_for_model(args, model_path, &lo, nullptr, files->mmproj);
  if (!mmproj.ok()) return early(mmproj.error());
  out.mmproj = std::move(mmproj).value();
  ProgressLine line;
  lo.progress = load_progress(line, std::filesystem::path(model_path).filename().string());
  auto model = Model::load(model_path, lo);
  line.clear();
  // Under mpirun every rank loads and agrees on the model (the serving ranks never return).
  if (Cluster* cluster = current_cluster(); cluster != nullptr) {
    SNIPER_ASSIGN_OR_RETURN(out.remote_experts,
                            join_model_parallel(*cluster, args, model_path, model, static_cast<int>(*threads),
                                                model.ok() ? (*model)->planned_batch() : 0));
  }
  if (!model.ok()) return model.error();
  out.model = std::move(model).value();
  if (out.mmproj != nullptr) SNIPER_TRY(out.mmproj->check_language_model(out.model->config().dim));
  out.path = model_path;
  so.batch = out.model->planned_batch();
  so.remote_experts = out.remote_experts.get();
  so.n_checkpoints = out.model->plan().n_checkpoints;
  if (args.has("--routing-bias")) {
    SNIPER_ASSIGN_OR_RETURN(so.routing_bias,
                            parse_routing_bias(args.get_string("--routing-bias"), out.model->config()));
  }
  auto session = Session::create(*out.model, so);
  if (!session.ok()) return session.error();
  out.session = std::move(session).value();
  lock_memory_if_asked(args);
  return out;
}

Result<int64_t> parse_checkpoint_count(const std::string& text) {
  if (text == "auto") return kAutoCheckpoints;
  char* end = nullptr;
  const long n = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || n < 0 || n > 256) {
    return make_error("--ctx-checkpoints is '%s' but must be an integer in [0, 256] or auto", text.c_str());
  }
  return static_cast<int64_t>(n);
}

Result<ModelLoadOptions> load_options_from_args(const Args& args) {
  ModelLoadOptions lo;
  SNIPER_ASSIGN_OR_RETURN(lo.residency, parse_residency_mode(args.get_string("--residency", "auto")));
  if (args.has("--no-mmap") && lo.residency == ResidencyMode::kMmap) {
    return make_error("--no-mmap and --residency mmap contradict each other: drop one of them");
  }
  SNIPER_ASSIGN_OR_RETURN(lo.mem_bytes, resolve_memory_budget(args.get_string("--mem", "auto")));
  SNIPER_ASSIGN_OR_RETURN(lo.n_ctx, args.get_int("--ctx", 0, 0, int64_t{1} << 24));
  if (args.get_string("--batch", "auto") == "auto") {
    lo.batch = 0;  // Model::load chooses
  } else {
    auto batch = args.get_int("--batch", 64, 1, 4096);
    if (!batch.ok()) return make_error("%s, or auto", batch.error().message.c_str());
    lo.batch = *batch;
  }
  SNIPER_ASSIGN_OR_RETURN(lo.kv_type, kv_config_from_args(args));
  SNIPER_ASSIGN_OR_RETURN(lo.cache_policy, parse_cache_policy(args.get_string("--cache-policy", "lfru")));
  lo.prefetch = !args.has("--no-prefetch");
  lo.repack = !args.has("--no-repack");
  SNIPER_ASSIGN_OR_RETURN(int64_t prefetch_depth, args.get_int("--prefetch-depth", 1, 1, 8));
  lo.prefetch_depth = static_cast<int>(prefetch_depth);
  const std::string io = args.get_string("--io", "auto");
  if (io == "auto") {
    lo.io_backend = IoBackend::kAuto;
  } else if (io == "uring") {
    lo.io_backend = IoBackend::kUring;
  } else if (io == "pread") {
    lo.io_backend = IoBackend::kPread;
  } else {
    return make_error("--io is '%s' but must be one of: auto, uring, pread", io.c_str());
  }
  SNIPER_ASSIGN_OR_RETURN(int64_t depth, args.get_int("--io-depth", 32, 1, 4096));
  lo.queue_depth = static_cast<uint32_t>(depth);
  lo.direct = args.has("--buffered-io") ? DirectMode::kForceBuffered : DirectMode::kAuto;
  // Under mpirun, a serving rank of expert parallelism loads only the routed experts it owns.
  if (const Cluster* cluster = current_cluster();
      cluster != nullptr && cluster->rank() > 0 && args.get_string("--distribute", "auto") != "layers") {
    lo.expert_rank = cluster->rank();
    lo.expert_ranks = cluster->size();
  }
  return lo;
}

Result<KvConfig> kv_config_from_args(const Args& args) {
  SNIPER_ASSIGN_OR_RETURN(KvType both, parse_kv_type(args.get_string("--kv-type", "f16")));
  KvConfig c(both);
  if (args.has("--cache-type-k")) {
    SNIPER_ASSIGN_OR_RETURN(c.k, parse_kv_type(args.get_string("--cache-type-k")));
  }
  if (args.has("--cache-type-v")) {
    SNIPER_ASSIGN_OR_RETURN(c.v, parse_kv_type(args.get_string("--cache-type-v")));
  }
  SNIPER_ASSIGN_OR_RETURN(c.flash_attn, parse_flash_attn(args.get_string("--flash-attn", "auto")));
  c.rotate = !args.has("--no-kv-rotation");
  SNIPER_TRY(validate_kv_config(c));
  return c;
}

Result<RoutingBias> parse_routing_bias(const std::string& text, const ModelConfig& c) {
  RoutingBias b;
  if (text == "auto") {
    b.keep = std::max<int64_t>(1, c.n_experts_active / 2);
    b.window = std::min<int64_t>(c.n_experts, 2 * c.n_experts_active);
    return b;
  }
  long keep = 0, window = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%ld:%ld%c", &keep, &window, &tail) != 2) {
    return make_error("--routing-bias is '%s' but must be KEEP:WINDOW (e.g. 4:16) or auto", text.c_str());
  }
  b.keep = keep;
  b.window = window;
  return b;
}

Result<SamplerConfig> sampler_from_args(const Args& args) {
  SamplerConfig c;
  SNIPER_ASSIGN_OR_RETURN(double temp, args.get_float("--temp", c.temperature, 0.0, 100.0));
  c.temperature = static_cast<float>(temp);
  SNIPER_ASSIGN_OR_RETURN(int64_t seed, args.get_int("--seed", 0, 0, INT64_MAX));
  c.seed = static_cast<uint64_t>(seed);
  SNIPER_ASSIGN_OR_RETURN(int64_t top_k, args.get_int("--top-k", c.top_k, 0, 1 << 24));
  c.top_k = static_cast<int>(top_k);
  SNIPER_ASSIGN_OR_RETURN(double top_p, args.get_float("--top-p", c.top_p, 0.0, 1.0));
  c.top_p = static_cast<float>(top_p);
  SNIPER_ASSIGN_OR_RETURN(double min_p, args.get_float("--min-p", c.min_p, 0.0, 1.0));
  c.min_p = static_cast<float>(min_p);
  SNIPER_ASSIGN_OR_RETURN(double rp, args.get_float("--repeat-penalty", c.repeat_penalty, 0.0, 10.0));
  c.repeat_penalty = static_cast<float>(rp);
  SNIPER_ASSIGN_OR_RETURN(int64_t rn, args.get_int("--repeat-last-n", c.repeat_last_n, 0, 1 << 20));
  c.repeat_last_n = static_cast<int>(rn);
  SNIPER_ASSIGN_OR_RETURN(double pp, args.get_float("--presence-penalty", c.presence_penalty, -2.0, 2.0));
  c.presence_penalty = static_cast<float>(pp);
  SNIPER_ASSIGN_OR_RETURN(double fp, args.get_float("--frequency-penalty", c.frequency_penalty, -2.0, 2.0));
  c.frequency_penalty = static_cast<float>(fp);
  SNIPER_TRY(c.validate());
  return c;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot open '%s'", path.c_str());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result<std::vector<int32_t>> parse_id_list(const std::string& json_text, const std::string& what) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) return make_error("%s is not a JSON array of token ids", what.c_str());
  std::vector<int32_t> ids;
  ids.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_number_integer()) return make_error("%s: item %zu is not an integer", what.c_str(), i);
    const int64_t v = j[i].get<int64_t>();
    if (v < 0 || v > INT32_MAX)
      return make_error("%s: item %zu is %ld, not a valid token id", what.c_str(), i, static_cast<long>(v));
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

std::string format_table(const std::vector<std::vector<std::string>>& rows, const std::vector<size_t>& right_aligned) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    if (width.size() < r.size()) width.resize(r.size(), 0);
    for (size_t k = 0; k < r.size(); ++k) width[k] = std::max(width[k], r[k].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t k = 0; k < r.size(); ++k) {
      const bool right = std::find(right_aligned.begin(), right_aligned.end(), k) != right_aligned.end();
      const std::string pad(width[k] - r[k].size(), ' ');
      if (k > 0) line += "   ";
      line += right ? pad + r[k] : r[k] + (k + 1 < r.size() ? pad : "");
    }
    out += line + "\n";
  }
  return out;
}

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

int fail(const Error& error) {
  std::fprintf(stderr, "error: %s\n", error.message.c_str());
  return 1;
}

}  // namespace sniper::cli
