// SPDX-License-Identifier: MIT
// sniper embed MODEL (-p TEXT | -f FILE) [--pooling mean|cls|last] [--format json|text]
// The embedding of each input (engine/embedding.h: pooled final hidden states, L2-normalised, as
// llama-embedding computes them): -p is one input, -f one input per non-empty line. Output: one
// JSON object {"model", "pooling", "dim", "data": [{"index", "n_tokens", "embedding"}]} (json),
// or one line of floats per input (text).
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "common.h"
#include "engine/embedding.h"

namespace sniper::cli {

namespace {

// The non-empty lines of `text` (a trailing '\r' dropped), in order.
std::vector<std::string> input_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

}  // namespace

int cmd_embed(int argc, char** argv) {
  const std::vector<FlagSpec> specs = concat(
      model_flags(), {
                         {"--prompt", "-p", "TEXT", "the text to embed"},
                         {"--file", "-f", "FILE", "embed each non-empty line of FILE"},
                         {"--pooling", nullptr, "mean|cls|last",
                          "override the GGUF's pooling_type (default: the file's; last when it has none)"},
                         {"--format", nullptr, "json|text", "output: one JSON object (default) or a line per input"},
                         {"--help", "-h", nullptr, "show this help"},
                     });
  auto args = Args::parse("embed", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("embed", "MODEL (-p TEXT | -f FILE) [--pooling mean|cls|last] [--format json|text]", specs,
                "Prints the embedding of each input: the model's final normed hidden states pooled (mean, first "
                "token or last token) and L2-normalised, as llama.cpp's llama-embedding computes them. Works on "
                "embedding models (Qwen3-Embedding) and on any causal model.");
    return 0;
  }
  if (args->has("--prompt") == args->has("--file")) return fail(make_error("give one of --prompt TEXT or --file FILE"));
  const std::string format = args->get_string("--format", "json");
  if (format != "json" && format != "text") {
    return fail(make_error("--format is '%s' but must be json or text", format.c_str()));
  }
  std::vector<std::string> inputs;
  if (args->has("--prompt")) {
    inputs.push_back(args->get_string("--prompt"));
  } else {
    auto text = read_file(args->get_string("--file"));
    if (!text.ok()) return fail(text.error());
    inputs = input_lines(*text);
    if (inputs.empty())
      return fail(make_error("%s holds no non-empty line to embed", args->get_string("--file").c_str()));
  }
  auto loaded = load_model_and_session(*args);
  if (!loaded.ok()) return fail(loaded.error());
  Model& model = *loaded->model;
  auto pooling =
      args->has("--pooling") ? parse_pooling(args->get_string("--pooling")) : pooling_from_gguf(model.gguf());
  if (!pooling.ok()) return fail(pooling.error());
  auto tokenizer = model.tokenizer();
  if (!tokenizer.ok()) return fail(tokenizer.error());
  const int64_t dim = model.config().dim;
  if (format == "json") {
    std::printf("{\"pooling\":\"%s\",\"dim\":%ld,\"data\":[", pooling_name(*pooling), static_cast<long>(dim));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> tokens = (*tokenizer)->encode(inputs[i], true, true);
    if (tokens.empty()) return fail(make_error("input %zu encodes to no tokens", i));
    auto v = embed_tokens(*loaded->session, tokens, *pooling);
    if (!v.ok()) return fail(make_error("input %zu: %s", i, v.error().message.c_str()));
    if (format == "json") {
      std::printf("%s{\"index\":%zu,\"n_tokens\":%zu,\"embedding\":[", i > 0 ? "," : "", i, tokens.size());
      for (size_t j = 0; j < v->size(); ++j) std::printf("%s%.9g", j > 0 ? "," : "", (*v)[j]);
      std::printf("]}");
    } else {
      for (size_t j = 0; j < v->size(); ++j) std::printf("%s%.9g", j > 0 ? " " : "", (*v)[j]);
      std::printf("\n");
    }
  }
  if (format == "json") std::printf("]}\n");
  return std::fflush(stdout) == 0 ? 0 : fail(make_error("writing the output failed"));
}

}  // namespace sniper::cli
