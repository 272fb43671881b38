// SPDX-License-Identifier: MIT
// sniper synth --arch A [shape flags] --type T [--seed S] -o OUT.gguf
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "synth/synth_model.h"

namespace sniper::cli {

int cmd_synth(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--arch", nullptr, "A", "llama | qwen2 | qwen3 | qwen3moe (llama + --experts = Mixtral-style)"},
      {"--dim", nullptr, "N", "embedding width (default 256)"},
      {"--layers", nullptr, "N", "layers (default 2)"},
      {"--heads", nullptr, "N", "attention heads (default 4)"},
      {"--kv-heads", nullptr, "N", "key/value heads (default 2)"},
      {"--head-dim", nullptr, "N", "head width (default 64)"},
      {"--ff", nullptr, "N", "dense FFN width, also Mixtral expert width (default 512)"},
      {"--experts", nullptr, "N", "routed experts (default 0 = dense)"},
      {"--experts-active", nullptr, "N", "experts per token"},
      {"--expert-ff", nullptr, "N", "qwen3moe expert FFN width"},
      {"--vocab", nullptr, "N", "synthetic vocabulary size (default 512)"},
      {"--vocab-from", nullptr, "GGUF", "copy the tokenizer (and chat template) of another GGUF"},
      {"--ctx", nullptr, "N", "context length (default 2048)"},
      {"--rope-base", nullptr, "X", "rope frequency base (default 10000)"},
      {"--eps", nullptr, "X", "RMS norm epsilon (default 1e-5)"},
      {"--type", nullptr, "T", "weight type or mix: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k "
                               "iq4_nl iq4_xs q3_k_m q4_k_m q5_k_m (default q4_k_m)"},
      {"--seed", nullptr, "S", "random seed (default 1)"},
      {"--output", "-o", "OUT.gguf", "output file"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("synth", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("synth", "--arch A [shape flags] --type T [--seed S] -o OUT.gguf", specs);
    return 0;
  }
  if (!args->has("--arch")) return fail(make_error("--arch is required (llama, qwen2, qwen3, qwen3moe)"));
  if (!args->has("--output")) return fail(make_error("--output (-o) OUT.gguf is required"));
  SynthSpec s;
  s.arch = args->get_string("--arch");
  if (s.arch == "qwen3moe") {
    s.n_experts = 16;
    s.n_experts_active = 4;
    s.expert_hidden_dim = 256;
  }
  const int64_t kMax = int64_t{1} << 24;
  struct IntFlag {
    const char* name;
    int64_t* dst;
  };
  const IntFlag ints[] = {
      {"--dim", &s.dim},           {"--layers", &s.n_layers},         {"--heads", &s.n_heads},
      {"--kv-heads", &s.n_kv_heads}, {"--head-dim", &s.head_dim},     {"--ff", &s.hidden_dim},
      {"--experts", &s.n_experts}, {"--experts-active", &s.n_experts_active}, {"--expert-ff", &s.expert_hidden_dim},
      {"--vocab", &s.vocab_size},  {"--ctx", &s.n_ctx},
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
  auto seed = args->get_int("--seed", 1, 0, INT64_MAX);
  if (!seed.ok()) return fail(seed.error());
  s.seed = static_cast<uint64_t>(*seed);
  s.type = args->get_string("--type", s.type);
  s.vocab_from = args->get_string("--vocab-from");
  const std::string out = args->get_string("--output");
  Status st = write_synth_model(s, out, nullptr);
  if (!st.ok()) return fail(st.error());
  std::printf("wrote %s (%s, %s)\n", out.c_str(), s.arch.c_str(), s.type.c_str());
  return 0;
}

}  // namespace sniper::cli
