// SPDX-License-Identifier: MIT
// sniper logits -m MODEL --prompt-ids FILE [--gen-ids FILE] -o OUT.f32
// Evaluates the prompt ids in one batch with logits for every position, then feeds the gen ids
// one at a time; writes every row as little-endian float32 (prompt rows, then generation rows),
// the layout of ../shared/reference.
// With --mtp, the rows are instead the model's MTP draft head's (model/mtp_head.h): row p is its
// logits for prompt token p paired with the target's hidden state at p - 1 (zeros for p = 0), as
// llama.cpp's MTP context computes them when it follows the prompt.
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "common.h"
#include "model/mtp_head.h"

namespace sniper::cli {

namespace {

// Collects the target's hidden rows of every position.
class HiddenRows final : public ForwardObserver {
 public:
  explicit HiddenRows(int64_t dim) : dim_(dim) {}
  void on_chunk(std::span<const int32_t> tokens, int64_t pos0, const float* hidden) override {
    rows.resize(static_cast<size_t>((pos0 + static_cast<int64_t>(tokens.size())) * dim_));
    std::memcpy(rows.data() + pos0 * dim_, hidden, tokens.size() * static_cast<size_t>(dim_) * sizeof(float));
  }
  void on_rewrite(int64_t keep) override { rows.resize(static_cast<size_t>(keep * dim_)); }
  std::vector<float> rows;

 private:
  int64_t dim_;
};

// The MTP head's logits for every prompt position (see the file comment).
Status mtp_rows(Model& model, Session& session, const std::vector<int32_t>& prompt, std::vector<float>* out) {
  const ModelConfig& c = model.config();
  HiddenRows hidden(c.dim);
  session.set_observer(&hidden);
  std::vector<float> ignored;
  Status st = session.eval(prompt, &ignored);
  session.set_observer(nullptr);
  SNIPER_TRY(st);
  // The whole prompt in one head forward, as llama.cpp's MTP context takes the prompt batch.
  const auto n = static_cast<int64_t>(prompt.size());
  SNIPER_ASSIGN_OR_RETURN(auto head, MtpHead::create(c, model.weights(), model.store(), n, model.embedding_rows()));
  SNIPER_ASSIGN_OR_RETURN(auto state, SequenceState::create(layer_state_specs(head->config()), session.n_ctx(),
                                                            session.state().kv_config()));
  const size_t dim = static_cast<size_t>(c.dim);
  std::vector<float> h(static_cast<size_t>(n) * dim, 0.0f), h_out(static_cast<size_t>(n) * dim);
  std::memcpy(h.data() + dim, hidden.rows.data(), static_cast<size_t>(n - 1) * dim * sizeof(float));
  out->resize(static_cast<size_t>(n * c.vocab_size));
  SNIPER_TRY(head->forward(prompt.data(), h.data(), n, 0, *state, h_out.data(), out->data(), session.pool(), true));
  return ok_status();
}

}  // namespace

int cmd_logits(int argc, char** argv) {
  const std::vector<FlagSpec> specs = concat(model_flags(), {
      {"--prompt-ids", nullptr, "FILE", "JSON array of prompt token ids"},
      {"--gen-ids", nullptr, "FILE", "JSON array of token ids fed one at a time after the prompt"},
      {"--mtp", nullptr, nullptr, "write the MTP draft head's logits per prompt position instead"},
      {"--output", "-o", "OUT.f32", "output file"},
      {"--help", "-h", nullptr, "show this help"},
  });
  auto args = Args::parse("logits", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("logits", "-m MODEL --prompt-ids FILE [--gen-ids FILE] -o OUT.f32", specs);
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
  Status st = mtp ? mtp_rows(*loaded->model, session, *prompt, &rows) : session.eval(*prompt, &rows);
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
