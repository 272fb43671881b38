// SPDX-License-Identifier: MIT
// sniper run MODEL -p PROMPT [-n N] [--temp T] [--seed S] [-t N]: streams the prompt and the
// generated text to stdout, then one line of figures to stderr. On a terminal, stderr shows the
// model load and a long prompt's evaluation as progress lines. Ctrl-C stops the generation and
// still prints the figures (exit status 130); a second Ctrl-C before that ends the process.
// Stopping at a full context is said, with the flags that go further.
// With --mmproj P --image F [--image F2] (or --audio F for an audio projector, in command-line
// order): each <__media__> marker of the prompt is a media item (as llama-mtmd-cli, markers are
// put before the prompt when it has none); the figures then add the media's tokens and the time
// to decode, preprocess (resize or log-mel) and encode them, and the time to first token.
#include <cstdio>
#include <cstring>

#include "base/process_stats.h"
#include "commands.h"
#include "common.h"
#include "engine/generate.h"
#include "hub_model.h"
#include "interrupt.h"
#include "media_args.h"
#include "progress.h"
#include "spec_args.h"

namespace sniper::cli {

int cmd_run(int argc, char** argv) {
  const std::vector<FlagSpec> specs = concat(
      concat(concat(concat(concat(model_flags(), media_flags()), sampling_flags()), spec_flags()),
             context_shift_flags()),
      {
          {"--prompt", "-p", "TEXT", "prompt text (quote it: -p \"Once upon a time\")"},
          {"--file", "-f", "PATH", "read the prompt from a file"},
          {"--n-predict", "-n", "N", "tokens to generate, -1 = until end of text (default 128)", nullptr, "--predict"},
          {"--no-bos", nullptr, nullptr, "do not add the BOS token"},
          {"--ignore-eos", nullptr, nullptr, "keep generating after end-of-generation tokens"},
          {"--no-echo", nullptr, nullptr, "do not print the prompt"},
          {"--help", "-h", nullptr, "show this help"},
      });
  auto args = Args::parse("run", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  if (args->has("--help")) {
    print_usage("run", "MODEL -p PROMPT [-n N] [--temp T] [--seed S] [-t N] [flags]", specs,
                "Generates text that continues PROMPT (no chat template: for a conversation use 'sniper chat'). "
                "MODEL is a GGUF file or a store name (OWNER/NAME[:QUANT]); -m MODEL works too. The text goes to "
                "stdout, one line of figures to stderr.");
    return 0;
  }
  if (Status st = check_model_positionals(*args); !st.ok()) return fail(st.error());
  std::string prompt = args->get_string("--prompt");
  if (args->has("--file")) {
    auto text = read_file(args->get_string("--file"));
    if (!text.ok()) return fail(text.error());
    prompt = *text;
  }
  if (!args->has("--prompt") && !args->has("--file"))
    return fail(make_error("no prompt given: pass -p TEXT or -f PATH"));
  auto n_predict = args->get_int("--n-predict", 128, -1, int64_t{1} << 24);
  if (!n_predict.ok()) return fail(n_predict.error());
  auto sampler = sampler_from_args(*args);
  if (!sampler.ok()) return fail(sampler.error());
  auto spec_req = parse_spec_args(*args);
  if (!spec_req.ok()) return fail(spec_req.error());
  if ((args->has("--image") || args->has("--audio")) && spec_req->kind == SpecKind::kMtp) {
    return fail(make_error("--spec-type mtp does not take media (the MTP head reads token ids); use ngram or draft"));
  }
  const auto t_load = now_s();
  auto loaded = load_model_and_session(*args, spec_req->checkpoints(), spec_req->draft_mem_bytes,
                                       spec_req->logit_rows(), spec_req->kind == SpecKind::kMtp);
  if (!loaded.ok()) return fail(loaded.error());
  auto threads = args->get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return fail(threads.error());
  auto spec = setup_spec(*spec_req, *loaded, *sampler, static_cast<int>(*threads));
  if (!spec.ok()) return fail(spec.error());
  auto tokenizer = loaded->model->tokenizer();
  if (!tokenizer.ok()) return fail(tokenizer.error());
  const Tokenizer& tok = **tokenizer;
  const double load_s = now_s() - t_load;
  // Media: encoded first, then the prompt split at its markers as mtmd does.
  std::vector<MediaChunk> media;
  MediaTimings media_t;
  const auto t_media = now_s();
  if (loaded->mmproj != nullptr) {
    auto chunks = encode_images(*args, *loaded->mmproj, loaded->session->pool(), &media_t);
    if (!chunks.ok()) return fail(chunks.error());
    media = std::move(chunks).value();
    if (prompt.find(kMediaMarker) == std::string::npos) {
      std::string markers;
      for (size_t i = 0; i < media.size(); ++i) markers += kMediaMarker;
      prompt = markers + prompt;
    }
  }
  const double media_s = now_s() - t_media;
  auto built = build_media_prompt(tok, loaded->model->config(), prompt, media, /*add_bos=*/!args->has("--no-bos"));
  if (!built.ok()) return fail(built.error());
  const MediaPrompt& mprompt = *built;
  const std::vector<int32_t>& ids = mprompt.cells;
  if (ids.empty()) return fail(make_error("the prompt encodes to no tokens"));

  GenerateOptions go;
  go.n_predict = *n_predict;
  go.sampler = *sampler;
  go.stop_at_eog = !args->has("--ignore-eos");
  go.draft = spec->source.get();
  go.spec = spec_req->config;
  auto keep = context_shift_from_args(*args, loaded->model->config(), &go.context_shift);
  if (!keep.ok()) return fail(keep.error());
  go.n_keep = resolve_n_keep(*keep, ids, tok.bos_id());
  if (!args->has("--no-echo")) {
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
  }
  ProgressLine line;
  std::atomic<bool>& interrupted = interrupt_requested();
  install_interrupt_handler(/*second_ends_process=*/true);
  go.on_prompt_progress = prompt_progress(line, &interrupted);
  auto stats = generate_media(*loaded->session, tok, mprompt, go, [&interrupted](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return !interrupted.load();
  });
  line.clear();
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (!stats.ok()) return fail(stats.error());
  const bool stopped = stats->finish_reason == "cancelled" && interrupted.load();
  if (stopped) std::fprintf(stderr, "interrupted: the figures so far\n");
  std::fprintf(stderr, "prompt: %ld tok, %.2f tok/s | generation: %ld tok, %.2f tok/s | peak RSS: %.1f MiB",
               static_cast<long>(stats->n_prompt), stats->prompt_tok_s(), static_cast<long>(stats->n_gen),
               stats->gen_tok_s(), static_cast<double>(peak_rss_bytes()) / (1024.0 * 1024.0));
  if (go.context_shift) std::fprintf(stderr, " | context shifts: %ld", static_cast<long>(stats->n_shifts));
  std::fputc('\n', stderr);
  if (!media.empty()) {
    int64_t n_media_tokens = 0;
    size_t n_audio = 0;
    for (const MediaChunk& c : media) {
      n_media_tokens += c.n_tokens();
      n_audio += c.kind == MediaKind::kAudio ? 1 : 0;
    }
    std::fprintf(stderr,
                 "media: %zu image(s), %zu audio, %ld tokens | decode %.1f ms, preprocess %.1f ms, encode %.1f ms | "
                 "time to first token %.1f ms (from the media's bytes) | load %.2f s%s\n",
                 media.size() - n_audio, n_audio, static_cast<long>(n_media_tokens), media_t.decode_s * 1e3,
                 media_t.preprocess_s * 1e3, media_t.encode_s * 1e3, (media_s * 1e3) + stats->ttft_ms, load_s,
                 loaded->mmproj->streams() ? " | projector layers streamed" : "");
  }
  if (go.draft != nullptr) std::fprintf(stderr, "%s\n", spec_summary(stats->spec).c_str());
  if (stats->finish_reason == "context") {
    std::fprintf(stderr,
                 "stopped: the context is full (%ld tokens); raise --ctx (this model takes up to %ld) or pass "
                 "--context-shift to go on past it\n",
                 static_cast<long>(loaded->session->n_ctx()), static_cast<long>(loaded->model->config().n_ctx_train));
  }
  return stopped ? 130 : 0;
}

}  // namespace sniper::cli
