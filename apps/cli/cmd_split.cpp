// SPDX-License-Identifier: MIT
// sniper split IN.gguf OUT_PREFIX --split-max-size SIZE | --split-max-tensors N: writes the model
// as a split GGUF set, as llama.cpp's gguf-split --split does (gguf/split_writer.h).
#include <cstdio>

#include "base/memory_limit.h"
#include "commands.h"
#include "common.h"
#include "gguf/split.h"
#include "gguf/split_writer.h"

namespace sniper::cli {

int cmd_split(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--split-max-size", nullptr, "SIZE", "largest tensor data per part, e.g. 2G, 500M"},
      {"--split-max-tensors", nullptr, "N", "most tensors per part"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("split", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("split", "IN.gguf OUT_PREFIX (--split-max-size SIZE | --split-max-tensors N)", specs,
                "Writes OUT_PREFIX-00001-of-0000N.gguf ... as llama-gguf-split --split does; IN may itself be a split "
                "model (any part). Every command loads split models.");
    return 0;
  }
  if (args->positionals().size() < 2) return fail(make_error("split takes IN.gguf OUT_PREFIX"));
  if (Status st = args->check_positionals(2, "IN.gguf OUT_PREFIX"); !st.ok()) return fail(st.error());
  SplitLimits limits;
  if (args->has("--split-max-size")) {
    auto size = parse_size(args->get_string("--split-max-size"));
    if (!size.ok()) return fail(make_error("--split-max-size: %s", size.error().message.c_str()));
    if (*size == 0) return fail(make_error("--split-max-size must be above 0"));
    limits.max_part_bytes = *size;
  }
  if (args->has("--split-max-tensors")) {
    auto n = args->get_int("--split-max-tensors", 0, 1, int64_t{1} << 30);
    if (!n.ok()) return fail(n.error());
    limits.max_part_tensors = static_cast<uint64_t>(*n);
  }
  if (limits.max_part_bytes == 0 && limits.max_part_tensors == 0) {
    return fail(make_error("give --split-max-size SIZE or --split-max-tensors N"));
  }
  auto model = gguf_open_model(args->positionals()[0]);
  if (!model.ok()) return fail(model.error());
  auto paths = gguf_write_split(*model, args->positionals()[1], limits);
  if (!paths.ok()) return fail(paths.error());
  for (const std::string& p : *paths) std::printf("%s\n", p.c_str());
  return 0;
}

}  // namespace sniper::cli
