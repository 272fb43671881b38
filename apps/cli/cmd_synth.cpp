// SPDX-License-Identifier: MIT
// sniper synth (--preset NAME | --arch A [shape flags]) [--type T] [--seed S] [--fast|--exact] -o OUT.gguf
// Flags given with a preset override its fields (e.g. --layers 4 for a shortened copy).
// sniper synth --mmproj gemma4v|qwen3vl|gemma4a (--for LM.gguf | --lm-dim N) [--preset gemma4-e4b|qwen3.5-35b-a3b]
//              [--dim --layers --heads --ff --type --seed] -o MMPROJ.gguf
// A random-weight multimodal projector for that language model (synth/synth_mmproj.h).
// Files over 100 MB get a progress line on stderr, updated in place, when stderr is a terminal
// (progress.h: never carriage returns into a file or a pipe).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>

#include "commands.h"
#include "common.h"
#include "gguf/split.h"
#include "model/config.h"
#include "progress.h"
#include "quant/quant.h"
#include "synth/synth_mmproj.h"
#include "synth/synth_model.h"
#include "synth/synth_presets.h"

namespace sniper::cli {

namespace {

constexpr uint64_t kProgressMinBytes = 100'000'000;  // smaller files write without a progress line

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// --mmproj: a projector for the language model of --for (or of width --lm-dim).
int synth_mmproj(const Args& args) {
  int64_t lm_dim = 0;
  if (args.has("--for")) {
    auto file = gguf_open_model(args.get_string("--for"));
    if (!file.ok()) return fail(file.error());
    auto config = load_model_config(*file);
    if (!config.ok())
      return fail(make_error("%s: %s", args.get_string("--for").c_str(), config.error().message.c_str()));
    lm_dim = config->dim;
  } else {
    auto d = args.get_int("--lm-dim", 0, 1, 65536);
    if (!d.ok()) return fail(d.error());
    if (*d == 0) return fail(make_error("--mmproj needs --for LM.gguf (or --lm-dim N): the projection's width"));
    lm_dim = *d;
  }
  SynthMmprojSpec s;
  s.projector = args.get_string("--mmproj");
  s.lm_dim = lm_dim;
  if (args.has("--preset")) {
    auto p = synth_mmproj_preset(args.get_string("--preset"), lm_dim, s.projector);
    if (!p.ok()) return fail(p.error());
    if (p->projector != s.projector) {
      return fail(make_error("--preset %s is a %s projector, not %s", args.get_string("--preset").c_str(),
                             p->projector.c_str(), s.projector.c_str()));
    }
    s = *p;
  }
  struct IntFlag {
    const char* name;
    int64_t* dst;
  };
  const IntFlag ints[] = {{"--dim", &s.n_embd}, {"--layers", &s.n_layers}, {"--heads", &s.n_heads}, {"--ff", &s.n_ff}};
  for (const IntFlag& f : ints) {
    auto v = args.get_int(f.name, *f.dst, 1, int64_t{1} << 20);
    if (!v.ok()) return fail(v.error());
    *f.dst = *v;
  }
  auto seed = args.get_int("--seed", static_cast<int64_t>(s.seed), 0, INT64_MAX);
  if (!seed.ok()) return fail(seed.error());
  s.seed = static_cast<uint64_t>(*seed);
  s.type = args.get_string("--type", s.type);
  s.act = args.get_string("--mmproj-act", s.act);
  const std::string out = args.get_string("--output");
  auto bytes = write_synth_mmproj(s, out);
  if (!bytes.ok()) return fail(bytes.error());
  std::printf("wrote %s (%s projector, width %lld x %lld layers, %s, into width %lld): %llu bytes\n", out.c_str(),
              s.projector.c_str(), static_cast<long long>(s.n_embd), static_cast<long long>(s.n_layers), s.type.c_str(),
              static_cast<long long>(lm_dim), static_cast<unsigned long long>(*bytes));
  return 0;
}

}  // namespace

int cmd_synth(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--preset", nullptr, "NAME", "a named shape (see below); other flags override its fields"},
      {"--arch", nullptr, "A",
       "llama | qwen2 | qwen3 | qwen3moe (llama + --experts = Mixtral-style) | qwen35 | "
       "qwen35moe | qwen3next | gemma4 (these four start from their -tiny preset)"},
      {"--dim", nullptr, "N", "embedding width (default 256)"},
      {"--layers", nullptr, "N", "layers (default 2)"},
      {"--heads", nullptr, "N", "attention heads (default 4)"},
      {"--kv-heads", nullptr, "N", "key/value heads (default 2)"},
      {"--head-dim", nullptr, "N", "head width (default 64)"},
      {"--ff", nullptr, "N", "dense FFN width, also Mixtral expert width (default 512)"},
      {"--experts", nullptr, "N", "routed experts (default 0 = dense)"},
      {"--experts-active", nullptr, "N", "experts per token"},
      {"--expert-ff", nullptr, "N", "expert FFN width (qwen3moe, qwen35moe, qwen3next, gemma4)"},
      {"--shared-ff", nullptr, "N", "shared expert FFN width (qwen35moe, qwen3next)"},
      {"--ssm-state", nullptr, "N", "delta-net head width (qwen35*, qwen3next)"},
      {"--ssm-k-heads", nullptr, "N", "delta-net key heads"},
      {"--ssm-v-heads", nullptr, "N", "delta-net value heads"},
      {"--full-attn-interval", nullptr, "N", "every N-th layer is full attention (qwen35*, qwen3next)"},
      {"--rope-dims", nullptr, "N", "rotated dims per head (qwen35*, qwen3next; default head width)"},
      {"--nextn", nullptr, "N", "multi-token-prediction blocks after the main stack, [0, 4] (qwen35*, qwen3next)"},
      {"--head-dim-swa", nullptr, "N", "sliding-layer head width (gemma4)"},
      {"--kv-heads-full", nullptr, "N", "key/value heads of the full layers (gemma4)"},
      {"--window", nullptr, "N", "sliding window (gemma4)"},
      {"--swa-period", nullptr, "N", "every N-th layer is full attention (gemma4)"},
      {"--per-layer-dim", nullptr, "N", "per-layer embedding width, 0 = none (gemma4)"},
      {"--shared-kv-layers", nullptr, "N", "last N layers share KV (gemma4)"},
      {"--vocab", nullptr, "N", "synthetic vocabulary size (default 512)"},
      {"--vocab-from", nullptr, "GGUF", "copy the tokenizer (and chat template) of another GGUF"},
      {"--chat-template", nullptr, "FILE",
       "tokenizer_config.json (template, bos/eos) or a Jinja file, with --vocab-from"},
      {"--ctx", nullptr, "N", "context length (default 2048)"},
      {"--rope-base", nullptr, "X", "rope frequency base (default 10000)"},
      {"--eps", nullptr, "X", "RMS norm epsilon (default 1e-5)"},
      {"--type", nullptr, "T",
       "weight type or llama.cpp mix: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k "
       "q5_k q6_k iq4_nl iq4_xs q3_k_m q4_k_m q5_k_m, or an i-quant file type: iq1_s iq1_m "
       "iq2_xxs iq2_xs iq2_s iq2_m iq3_xxs iq3_xs iq3_s iq3_m q2_k_s tq1_0 tq2_0 (any case; "
       "default q4_k_m)"},
      {"--ftype", nullptr, "T", "same as --type (llama-quantize's spelling, e.g. IQ2_M)"},
      {"--seed", nullptr, "S", "random seed (default 1)"},
      {"--pooling", nullptr, "none|mean|cls|last", "write {arch}.pooling_type: an embedding model (default: no key)"},
      {"--fast", nullptr, nullptr, "write random quantized blocks directly (GB/s; default above 256 MiB)"},
      {"--exact", nullptr, nullptr, "quantize normal(0, 0.02) floats with the reference quantizers (slow)"},
      {"--threads", "-t", "N", "generator threads (default: all cores; the file does not depend on it)"},
      {"--output", "-o", "OUT.gguf", "output file"},
      {"--dry-run", nullptr, nullptr, "print the file size and tensor-type mix without writing"},
      {"--mmproj", nullptr, "gemma4v|qwen3vl|gemma4a",
       "write a multimodal projector instead (with --for or --lm-dim; --preset gemma4-e4b / qwen3.5-35b-a3b gives "
       "the real vision tower's shape, gemma4a with gemma4-e4b its audio tower; --dim --layers --heads --ff --type "
       "--seed override)"},
      {"--for", nullptr, "LM.gguf", "with --mmproj: the language model the projector feeds (its width)"},
      {"--lm-dim", nullptr, "N", "with --mmproj: the language model's width instead of --for"},
      {"--mmproj-act", nullptr, "gelu|silu|gelu_quick", "with --mmproj: the ViT FFN's activation (default gelu)"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("synth", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("synth", "(--preset NAME | --arch A [shape flags]) [--type T] [--seed S] -o OUT.gguf", specs,
                "Writes a random-weight model of a real architecture: real tensor names, metadata, valid quantized "
                "blocks and a tokenizer, for tests and benchmarks of shapes you do not have on disk.");
    std::printf("\npresets:\n");
    int name_width = 0;
    for (const SynthPreset& p : synth_presets()) name_width = std::max(name_width, static_cast<int>(p.name.size()));
    for (const SynthPreset& p : synth_presets()) {
      std::printf("  %-*s %s\n", name_width, p.name.c_str(),
                  wrap_text(p.description, help_width(), name_width + 3, false).c_str());
    }
    return 0;
  }
  if (!args->has("--output") && !args->has("--dry-run")) return fail(make_error("--output (-o) OUT.gguf is required"));
  if (args->has("--mmproj")) return synth_mmproj(*args);
  SynthSpec s;
  if (args->has("--preset")) {
    const std::string name = args->get_string("--preset");
    const SynthPreset* p = find_synth_preset(name);
    if (p == nullptr) {
      return fail(make_error("--preset is '%s' but must be one of: %s", name.c_str(), synth_preset_names().c_str()));
    }
    s = p->spec;
    s.arch = args->get_string("--arch", s.arch);
  } else {
    if (!args->has("--arch"))
      return fail(make_error(
          "--arch (llama, qwen2, qwen3, qwen3moe, qwen35, qwen35moe, qwen3next, gemma4) or --preset is required"));
    s.arch = args->get_string("--arch");
    const std::string tiny = (s.arch == "gemma4" ? std::string("gemma4moe") : s.arch) + "-tiny";
    if (s.arch != "qwen3moe" && find_synth_preset(tiny) != nullptr) {
      s = find_synth_preset(tiny)->spec;
    } else if (s.arch == "qwen3moe") {
      s.n_experts = 16;
      s.n_experts_active = 4;
      s.expert_hidden_dim = 256;
    }
  }
  const int64_t kMax = int64_t{1} << 24;
  struct IntFlag {
    const char* name;
    int64_t* dst;
  };
  const IntFlag ints[] = {
      {"--dim", &s.dim},
      {"--layers", &s.n_layers},
      {"--heads", &s.n_heads},
      {"--kv-heads", &s.n_kv_heads},
      {"--head-dim", &s.head_dim},
      {"--ff", &s.hidden_dim},
      {"--experts", &s.n_experts},
      {"--experts-active", &s.n_experts_active},
      {"--expert-ff", &s.expert_hidden_dim},
      {"--vocab", &s.vocab_size},
      {"--ctx", &s.n_ctx},
      {"--shared-ff", &s.shared_expert_hidden_dim},
      {"--ssm-state", &s.ssm_state},
      {"--ssm-k-heads", &s.ssm_k_heads},
      {"--ssm-v-heads", &s.ssm_v_heads},
      {"--full-attn-interval", &s.full_attention_interval},
      {"--rope-dims", &s.n_rot},
      {"--nextn", &s.nextn_layers},
      {"--head-dim-swa", &s.head_dim_swa},
      {"--kv-heads-full", &s.n_kv_heads_full},
      {"--window", &s.sliding_window},
      {"--swa-period", &s.swa_period},
      {"--per-layer-dim", &s.per_layer_dim},
      {"--shared-kv-layers", &s.shared_kv_layers},
  };
  for (const IntFlag& f : ints) {
    auto v = args->get_int(f.name, *f.dst, 0, kMax);
    if (!v.ok()) return fail(v.error());
    *f.dst = *v;
  }
  auto base = args->get_float("--rope-base", s.rope_base, 1.0, 1e9);
  if (!base.ok()) return fail(base.error());
  s.rope_base = static_cast<float>(*base);
  auto eps = args->get_float("--eps", s.norm_eps, 1e-12, 0.5);
  if (!eps.ok()) return fail(eps.error());
  s.norm_eps = static_cast<float>(*eps);
  auto seed = args->get_int("--seed", static_cast<int64_t>(s.seed), 0, INT64_MAX);
  if (!seed.ok()) return fail(seed.error());
  s.seed = static_cast<uint64_t>(*seed);
  auto threads = args->get_int("--threads", 0, 0, 4096);
  if (!threads.ok()) return fail(threads.error());
  s.n_threads = static_cast<int>(*threads);
  if (args->has("--fast") && args->has("--exact")) return fail(make_error("--fast and --exact exclude each other"));
  if (args->has("--fast")) s.fill = SynthFill::kFast;
  if (args->has("--exact")) s.fill = SynthFill::kExact;
  if (args->has("--type") && args->has("--ftype")) return fail(make_error("--type and --ftype exclude each other"));
  s.type = args->get_string("--type", args->get_string("--ftype", s.type));
  s.vocab_from = args->get_string("--vocab-from", s.vocab_from);
  if (args->has("--pooling")) {
    const std::string pooling = args->get_string("--pooling");
    const char* names[] = {"none", "mean", "cls", "last"};
    s.pooling_type = -2;
    for (int i = 0; i < 4; ++i) {
      if (pooling == names[i]) s.pooling_type = i;
    }
    if (s.pooling_type < 0) {
      return fail(make_error("--pooling is '%s' but must be one of: none, mean, cls, last", pooling.c_str()));
    }
  }
  s.chat_template_from = args->get_string("--chat-template", "");
  if (!s.chat_template_from.empty() && s.vocab_from.empty()) {
    return fail(make_error("--chat-template needs --vocab-from (a real tokenizer for the template's special tokens)"));
  }
  if (args->has("--dry-run")) {
    auto bytes = synth_model_bytes(s);
    if (!bytes.ok()) return fail(bytes.error());
    auto plan = plan_synth_model(s);
    if (!plan.ok()) return fail(plan.error());
    std::map<std::string, std::pair<int, uint64_t>> mix;  // type -> (tensors, bytes)
    for (const SynthTensor& t : *plan) {
      auto& m = mix[get_type_info(t.type).name];
      ++m.first;
      m.second += t.nbytes;
    }
    std::printf("%s (%s, %s): %llu bytes (%.2f GB, %.2f GiB), %zu tensors\n", s.arch.c_str(), s.type.c_str(),
                args->has("--preset") ? args->get_string("--preset").c_str() : "custom",
                static_cast<unsigned long long>(*bytes), *bytes / 1e9, *bytes / 1073741824.0, plan->size());
    for (const auto& [type, m] : mix) {
      std::printf("  %-8s %5d tensors %15llu bytes\n", type.c_str(), m.first,
                  static_cast<unsigned long long>(m.second));
    }
    return 0;
  }
  const std::string out = args->get_string("--output");

  auto fast = synth_uses_fast_fill(s);
  if (!fast.ok()) return fail(fast.error());
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine line;
  auto progress = [&](uint64_t done, uint64_t total) {
    if (total < kProgressMinBytes) return;
    const double t = seconds_since(t0);
    char text[512];
    std::snprintf(text, sizeof(text), "writing %s: %6.2f / %.2f GB (%3d%%) %5.2f GB/s", out.c_str(), done / 1e9,
                  total / 1e9, static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)),
                  t > 0 ? done / 1e9 / t : 0.0);
    line.update(text);
  };
  Status st = write_synth_model(s, out, progress);
  line.clear();
  if (!st.ok()) return fail(st.error());
  const double elapsed_s = seconds_since(t0);
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(out, ec);
  std::printf("wrote %s (%s, %s, %s fill): %llu bytes (%.2f GB, %.2f GiB) in %.1f s, %.2f GB/s\n", out.c_str(),
              s.arch.c_str(), s.type.c_str(), *fast ? "fast" : "exact", static_cast<unsigned long long>(file_bytes),
              file_bytes / 1e9, file_bytes / 1073741824.0, elapsed_s,
              elapsed_s > 0 ? file_bytes / 1e9 / elapsed_s : 0.0);
  return 0;
}

}  // namespace sniper::cli
