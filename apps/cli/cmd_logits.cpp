// SPDX-License-Identifier: MIT
// sniper logits -m MODEL --prompt-ids FILE [--gen-ids FILE] -o OUT.f32
// Evaluates the prompt ids in one batch with logits for every position, then feeds the gen ids
// one at a time; writes every row as little-endian float32 (prompt rows, then generation rows),
// the layout of ../shared/reference.
// sniper logits -m MODEL [--mmproj P --image F --audio A ...] --prompt "TEXT with <__media__>" [--gen-ids G]
//               [--media-embd-out E.f32] -o OUT.f32
// What ../shared/tools/mm/dump_mtmd.cpp writes: the prompt tokenized as mtmd does (special tokens
// parsed, BOS added, each marker a media item with its begin/end text), then the logits after its last
// token and one row per teacher-forced gen id; E.f32: every media chunk's embeddings in order.
// With --mtp, the rows are instead the model's MTP draft head's (model/mtp_head.h): row p is its
// logits for prompt token p paired with the target's hidden state at p - 1 (zeros for p = 0), as
// llama.cpp's MTP context computes them when it follows the prompt.
#include <cstdio>

#include "commands.h"
#include "common.h"
#include "engine/mtp_draft.h"
#include "media_args.h"

namespace sniper::cli {

namespace {

// Writes floats to `path` atomically (a temp file, then rename).
Status write_floats(const std::string& path, const std::vector<float>& rows) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return make_error("cannot create '%s'", tmp.c_str());
  bool ok = std::fwrite(rows.data(), sizeof(float), rows.size(), f) == rows.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return make_error("writing '%s' failed", path.c_str());
  }
  return ok_status();
}

// The --prompt form: text (with media markers) as mtmd tokenizes it.
int logits_of_prompt(const Args& args, const std::vector<int32_t>& gen) {
  auto loaded = load_model_and_session(args, 0, 0, 1, false);
  if (!loaded.ok()) return fail(loaded.error());
  Session& session = *loaded->session;
  auto tokenizer = loaded->model->tokenizer();
  if (!tokenizer.ok()) return fail(tokenizer.error());
  std::vector<MediaChunk> media;
  if (loaded->mmproj != nullptr) {
    auto chunks = encode_images(args, *loaded->mmproj, session.pool());
    if (!chunks.ok()) return fail(chunks.error());
    media = std::move(chunks).value();
  }
  auto prompt = build_media_prompt(**tokenizer, loaded->model->config(), args.get_string("--prompt"), media, true);
  if (!prompt.ok()) return fail(prompt.error());
  if (prompt->cells.empty()) return fail(make_error("the prompt encodes to no tokens"));
  Status st = session.eval_prompt(*prompt);
  if (!st.ok()) return fail(st.error());
  std::vector<float> rows(session.last_logits());
  for (int32_t id : gen) {
    const int32_t one[1] = {id};
    st = session.eval(one);
    if (!st.ok()) return fail(st.error());
    rows.insert(rows.end(), session.last_logits().begin(), session.last_logits().end());
  }
  if (args.has("--media-embd-out")) {
    std::vector<float> embd;
    for (const MediaChunk& c : media) embd.insert(embd.end(), c.embd.begin(), c.embd.end());
    st = write_floats(args.get_string("--media-embd-out"), embd);
    if (!st.ok()) return fail(st.error());
  }
  st = write_floats(args.get_string("--output"), rows);
  if (!st.ok()) return fail(st.error());
  std::fprintf(stderr, "prompt: %ld cells (%zu media); wrote %zu rows of %ld logits to %s\n",
               static_cast<long>(prompt->n_cells()), media.size(), 1 + gen.size(),
               static_cast<long>(loaded->model->config().vocab_size), args.get_string("--output").c_str());
  return 0;
}

}  // namespace

int cmd_logits(int argc, char** argv) {
  const std::vector<FlagSpec> specs =
      concat(concat(model_flags(), media_flags()),
             {
                 {"--prompt-ids", nullptr, "FILE", "JSON array of prompt token ids"},
                 {"--prompt", "-p", "TEXT",
                  "prompt text instead, tokenized as llama.cpp's mtmd does (special tokens, BOS, each "
                  "<__media__> the next --image or --audio); writes the last prompt row, then the gen rows"},
                 {"--media-embd-out", nullptr, "E.f32", "with --prompt: write the media chunks' embeddings"},
                 {"--gen-ids", nullptr, "FILE", "JSON array of token ids fed one at a time after the prompt"},
                 {"--mtp", nullptr, nullptr, "write the MTP draft head's logits per prompt position instead"},
                 {"--output", "-o", "OUT.f32", "output file"},
                 {"--help", "-h", nullptr, "show this help"},
             });
  auto args = Args::parse("logits", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("logits",
                "MODEL (--prompt-ids FILE | [--mmproj P --image F --audio A] --prompt TEXT) [--gen-ids FILE] "
                "[--media-embd-out E.f32] -o OUT.f32",
                specs,
                "Writes the logits of every prompt position (one batch), then of each --gen-ids token fed alone, as "
                "little-endian float32 rows: the layout of llama.cpp's reference dumps. With --prompt, each "
                "<__media__> marker in the text takes the next --image or --audio, encoded by the --mmproj projector "
                "(--media-embd-out writes their embeddings).");
    return 0;
  }
  if (!args->has("--prompt-ids") && !args->has("--prompt")) {
    return fail(make_error("--prompt-ids FILE or --prompt TEXT is required"));
  }
  if (!args->has("--output")) return fail(make_error("--output (-o) OUT.f32 is required"));
  if (args->has("--prompt")) {
    if (args->has("--prompt-ids") || args->has("--mtp")) {
      return fail(make_error("--prompt takes neither --prompt-ids nor --mtp"));
    }
    std::vector<int32_t> gen;
    if (args->has("--gen-ids")) {
      auto gen_text = read_file(args->get_string("--gen-ids"));
      if (!gen_text.ok()) return fail(gen_text.error());
      auto g = parse_id_list(*gen_text, args->get_string("--gen-ids"));
      if (!g.ok()) return fail(g.error());
      gen = std::move(g).value();
    }
    return logits_of_prompt(*args, gen);
  }
  if (args->has("--mmproj") || args->has("--image") || args->has("--audio")) {
    return fail(
        make_error("--mmproj, --image and --audio take --prompt TEXT (with <__media__> markers), not --prompt-ids"));
  }
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
