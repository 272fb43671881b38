// SPDX-License-Identifier: MIT
// `sniper version` / `sniper --version`: the version, the git commit and build type it was built
// from, and the kernel tiers this CPU supports (the one in use marked), so a bug report carries
// what matters in one paste.
#include <cstdio>
#include <string>

#include "base/cpu_features.h"
#include "build_info.h"
#include "commands.h"
#include "common.h"

namespace sniper::cli {

int cmd_version(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {{"--help", "-h", nullptr, "show this help"}};
  auto args = Args::parse("version", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("version", "", specs, "Prints the version, the commit and build type, and the CPU's kernel tiers.");
    return 0;
  }
  if (Status st = args->check_positionals(0, ""); !st.ok()) return fail(st.error());
  std::printf("sniper %s (commit %s, %s build)\n", SNIPER_VERSION, SNIPER_GIT_COMMIT, SNIPER_BUILD_TYPE);
  const IsaTier used = selected_tier();
  std::string tiers;
  for (IsaTier t : arch_tiers()) {
    if (!host_runs(t)) break;
    tiers += std::string(tiers.empty() ? "" : ", ") + isa_tier_name(t) + (t == used ? " (in use)" : "");
  }
  std::printf("kernel tiers on this CPU: %s\n", tiers.c_str());
  std::string flags;
  for (const NamedCpuFeature& f : cpu_feature_list()) {
    if (f.present) flags += std::string(flags.empty() ? "" : " ") + f.name;
  }
  std::printf("cpu features: %s\n", flags.empty() ? "(none of the SIMD extensions Sniper uses)" : flags.c_str());
  return 0;
}

}  // namespace sniper::cli
