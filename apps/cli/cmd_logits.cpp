// SPDX-License-Identifier: MIT
// sniper logits -m MODEL --prompt-ids FILE [--gen-ids FILE] -o OUT.f32
// Evaluates the prompt ids in one batch with logits for every position, then feeds the gen ids
// one at a time; writes every row as little-endian float32 (prompt rows, then generation rows),
// the layout of ../shared/reference.
// With --mtp, the rows are instead the model's MTP draft head's (model/mtp_head.h): row p is its
// logits for prompt token p paired with the target's hidden state at p - 1 (zeros for p = 0), as
// llama.cpp's MTP context computes them when it follows the prompt.
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "engine/mtp_draft.h"

namespace sniper::cli {

int cmd_logits(int argc, char** argv) {
  const std::vector<FlagSpec> specs = concat(
      model_flags(), {
                         {"--prompt-ids", nullptr, "FILE", "JSON array of prompt token ids"},
                         {"--gen-ids", nullptr, "FILE", "JSON array of token ids fed one at a time after the prompt"},
                         {"--mtp", nullptr, nullptr, "write the MTP draft head's logits per prompt position instead"},
                         {"--output", "-o", "OUT.f32", "output file"},
                         {"--help", "-h", nullptr, "show this help"},
                     });
  auto args = Args::parse("logits", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("logits", "MODEL --prompt-ids FILE [--gen-ids FILE] -o OUT.f32", specs,
                "Writes the logits of every prompt position (one batch), then of each --gen-ids token fed alone, as "
                "little-endian float32 rows: the layout of llama.cpp's reference dumps.");
    return 0;
  }
  if (!args->has("--prompt-ids")) return fail(make_error("--prompt-ids FILE is required"));
  if (!args->has("--output")) return fail(make_error("--output (-o) OUT.f32 is required"));
  auto prompt_text = read_file(args->get_string("--prompt-ids"));
  if (!prompt_text.ok()) return fail(prompt_text.error());
  auto prompt = parse_id_list(*prompt_text, args->get_string("--prompt-ids"));
  if (!prompt.ok()) return fail(prompt.error());
  if (prompt->empty()) return fail(make_error("%s holds no token ids", args->get_string("--prompt-ids").c_str()));
  std::vector<int32_t> gen;
  if (args->has("--gen-ids")) {
    auto gen_text = read_file(args->get_string("--gen-ids"));
    if (!gen_text.ok()) return fail(gen_text.error());
    auto g = parse_id_list(*gen_text, args->get_string("--gen-ids"));
    if (!g.ok()) return fail(g.error());
    gen = std::move(g).value();
  }
  // Chunked prefill gives the same rows as one batch: every row is computed independently.
  // Every prompt row is returned at once (plus the session's own last row): the plan counts them.
  const bool mtp = args->has("--mtp");
  if (mtp && !gen.empty()) return fail(make_error("--mtp writes prompt rows only: drop --gen-ids"));
  auto loaded = load_model_and_session(*args, 0, 0, static_cast<int64_t>(prompt->size()) + 1, mtp);
  if (!loaded.ok()) return fail(loaded.error());
  Session& session = *loaded->session;
  const std::string out_path = args->get_string("--output");
  const std::string tmp_path = out_path + ".tmp";
  std::FILE* out = std::fopen(tmp_path.c_str(), "wb");
  if (out == nullptr) return fail(make_error("cannot create '%s'", tmp_path.c_str()));
  std::vector<float> rows;
  Status st = mtp ? mtp_prompt_logits(*loaded->model, session, *prompt, &rows) : session.eval(*prompt, &rows);
  bool ok = st.ok() && std::fwrite(rows.data(), sizeof(float), rows.size(), out) == rows.size();
  for (size_t i = 0; ok && i < gen.size(); ++i) {
    const int32_t one[1] = {gen[i]};
    st = session.eval(one);
    const auto& last = session.last_logits();
    ok = st.ok() && std::fwrite(last.data(), sizeof(float), last.size(), out) == last.size();
  }
  ok = (std::fclose(out) == 0) && ok;
  if (!ok || std::rename(tmp_path.c_str(), out_path.c_str()) != 0) {
    std::remove(tmp_path.c_str());
    return fail(st.ok() ? make_error("writing '%s' failed", out_path.c_str()) : st.error());
  }
  std::fprintf(stderr, "wrote %zu rows of %ld logits to %s\n", prompt->size() + gen.size(),
               static_cast<long>(loaded->model->config().vocab_size), out_path.c_str());
  return 0;
}

}  // namespace sniper::cli
