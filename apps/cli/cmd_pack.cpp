// SPDX-License-Identifier: MIT
// sniper pack IN.gguf OUT.gguf: one read per expert (see weights/pack_experts.h).
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "weights/pack_experts.h"

namespace sniper::cli {

int cmd_pack(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {{"--help", "-h", nullptr, "show this help"}};
  auto args = Args::parse("pack", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("pack", "IN.gguf OUT.gguf", specs,
                "Rewrites a MoE model so each expert (gate, up, down) is one 4 KiB-aligned read. Sniper loads packed "
                "and unpacked files alike; llama.cpp does not load the packed layout.");
    return 0;
  }
  if (args->positionals().size() < 2) return fail(make_error("pack takes IN.gguf OUT.gguf"));
  if (Status st = args->check_positionals(2, "IN.gguf OUT.gguf"); !st.ok()) return fail(st.error());
  const std::string in = args->positionals()[0], out = args->positionals()[1];
  if (in == out) return fail(make_error("IN and OUT must differ"));
  uint64_t last_mib = 0;
  Status st = pack_experts(in, out, [&](uint64_t done, uint64_t total) {
    if (done - last_mib < (uint64_t{256} << 20) && done != total) return;
    last_mib = done;
    std::fprintf(stderr, "\rpacking %.2f / %.2f GB", static_cast<double>(done) / 1e9, static_cast<double>(total) / 1e9);
  });
  std::fprintf(stderr, "\n");
  if (!st.ok()) return fail(st.error());
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace sniper::cli
