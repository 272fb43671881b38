// SPDX-License-Identifier: MIT
// `sniper serve -m MODEL [--host H] [--port P] [--api-key KEY] [--slots N] ...`: loads the
// model, starts the OpenAI-compatible HTTP server and prints exactly one line to stdout when
// it accepts connections: "sniper serve: listening on http://HOST:PORT/". SIGINT and SIGTERM
// stop it cleanly (exit 0). (`sniper top` lives in top.cpp.)
// Several models: `--models DIR` and/or repeated `--model NAME=PATH` give a pool (model_pool.h)
// that loads each on demand within --mem, at most --max-loaded at once, unloading after
// --keep-alive. One model with neither --keep-alive nor --max-loaded (plain `-m FILE`) is
// loaded before listening and stays loaded, as it always did.
#include "server/serve_main.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/memory_limit.h"
#include "cli/cluster_args.h"
#include "cli/common.h"
#include "cli/hub_model.h"
#include "cli/media_args.h"
#include "cli/progress.h"
#include "cli/spec_args.h"
#include "engine/batch_eval.h"
#include "hub/hub_files.h"
#include "model/context_shift.h"
#include "server/http_server.h"
#include "server/model_sources.h"
#include "server/request_guard.h"
#include "server/serve_flags.h"
#include "server/server_context.h"

namespace sniper::server {

namespace {

// A hub reference ("owner/name[:QUANT|:FILE.gguf]") pulled into the store if needed, as -hf
// does: the first part's path (and the repository's projector into *mmproj when asked for).
Result<std::string> pull_hub_model(const std::string& ref, const cli::Args& args, std::string* mmproj = nullptr) {
  cli::HubPullRequest request;
  request.ref = ref;
  SNIPER_ASSIGN_OR_RETURN(request.budget_bytes, resolve_memory_budget(args.get_string("--mem", "auto")));
  request.offline_fallback = true;
  request.with_mmproj = mmproj != nullptr;
  SNIPER_ASSIGN_OR_RETURN(hub::PullResult pulled, cli::pull_with_progress(request));
  if (mmproj != nullptr) *mmproj = pulled.mmproj_path;
  return pulled.paths.front();
}

// --model NAME=TARGET: a TARGET that is no file on disk but reads as a hub reference (a path
// ending in ".gguf" without ':' stays a path, so a typo gets "no file") is pulled first. A plain
// -m MODEL (no '=') is a path or a store name (cli::resolve_model_ref).
Result<std::string> resolve_model_flag(const std::string& spec, const cli::Args& args) {
  std::error_code ec;
  const size_t eq = spec.find('=');
  if (std::filesystem::is_regular_file(spec, ec)) return spec;
  if (eq == std::string::npos) {
    // -m MODEL / the first word: a path or a store name, as every other command takes it.
    SNIPER_ASSIGN_OR_RETURN(uint64_t budget, resolve_memory_budget(args.get_string("--mem", "auto")));
    return cli::resolve_model_ref(spec, budget);
  }
  const std::string target = spec.substr(eq + 1);
  const bool path_like = target.size() > 5 && target.ends_with(".gguf") && target.find(':') == std::string::npos;
  if (path_like || std::filesystem::exists(target, ec) || !hub::parse_repo_ref(target).ok()) return spec;
  SNIPER_ASSIGN_OR_RETURN(std::string path, pull_hub_model(target, args));
  return spec.substr(0, eq + 1) + path;
}

}  // namespace

int serve_main(int argc, char** argv) {
  using cli::FlagSpec;
  const std::vector<FlagSpec> specs = cli::concat(
      cli::concat(cli::concat(cli::model_flags(), cli::spec_flags()), cli::context_shift_flags()),
      {
          {"--host", nullptr, "ADDR",
           "address to listen on (default 127.0.0.1; 0.0.0.0 exposes the server to the network)"},
          {"--port", nullptr, "N", "port (default 8000; 0 = pick a free port)"},
          {"--api-key", nullptr, "KEY",
           "require 'Authorization: Bearer KEY' on every request except GET / and /health"},
          {"--allowed-hosts", nullptr, "LIST",
           "host names the server answers to besides its address and localhost (comma-separated, repeatable; "
           "'.example.com' = the domain and its subdomains; '*' = any, e.g. behind a proxy): other Host headers get "
           "403 (DNS rebinding)"},
          {"--cors-origin", nullptr, "ORIGIN",
           "let web pages from ORIGIN (https://app.example.com; repeatable; '*' = any) call the API from a browser; "
           "other origins get 403"},
          {"--slots", nullptr, "N",
           "requests served at once, each with its own KV cache of --ctx tokens, all inside --mem (default 1)"},
          {"--queue", nullptr, "N", "requests waiting for a slot before the server answers 503 (default 16)"},
          {"--ctx-checkpoints", nullptr, "N|auto",
           "state checkpoints per slot for prefix reuse on hybrid models (delta-net layers, sliding windows), counted "
           "in --mem; 0 = none (default auto: 8, fewer if 8 per slot take over 1/8 of --mem)"},
          {"--checkpoint-every", nullptr, "N", "tokens of a prompt between two state checkpoints (default 512)"},
          {"--context-compression", nullptr, "TYPE",
           "none|q8_0|q4_0: KV rows of saved contexts exact (f16/q8_0 as the cache, default) or quantized (smaller, "
           "lossy)"},
          {"--context-dir", nullptr, "DIR",
           "where /v1/context/save stores KV states (default $XDG_CACHE_HOME/sniper/contexts or "
           "~/.cache/sniper/contexts)"},
          {"--max-body", nullptr, "SIZE", "largest request body (default 4M; larger -> 413)"},
          {"--timeout", nullptr, "S",
           "seconds to receive a request body and for each write of a response (default 30; -> 408 / close)"},
          {"--header-timeout", nullptr, "S",
           "seconds for a request's headers to arrive, from the connection or a later request's first byte (default "
           "10; -> 408)"},
          {"--max-connections", nullptr, "N",
           "open connections in total; more are answered 503 at once (default 1024)"},
          {"--max-connections-per-client", nullptr, "N",
           "open connections per client address; more are answered 503 at once (default 128)"},
          {"--alias", "-a", "NAME[,NAME...]",
           "names a single model answers to besides its own (repeatable; '*' = any name, for clients that send a fixed "
           "model name; the first is the id it reports; default: the file name without .gguf)"},
          {"--pooling", nullptr, "mean|cls|last",
           "embeddings (/v1/embeddings, /api/embed): override each model's pooling_type (default: the GGUF's; last "
           "when it has none)"},
          {"--content-special-tokens", nullptr, nullptr,
           "tokenize control-token text typed in messages (<|im_end|>, ...) as the control token, as llama-server "
           "does (default: as plain text; only the chat template's markup is special)"},
          {"--models", nullptr, "DIR",
           "serve every *.gguf in DIR, named by file stem (split X-00001-of-0000N.gguf: X); -m/--model NAME=PATH or "
           "NAME=REPO[:QUANT] (pulled if needed) may repeat and add to it"},
          {"--max-loaded", nullptr, "N", "models in memory at once, each planned for --mem / N (default 1)"},
          {"--keep-alive", nullptr, "DURATION",
           "unload a model idle this long: 30s, 5m, 1h; 0 = right after its request; -1 = never (default 5m)"},
          {"--load-timeout", nullptr, "DURATION",
           "how long a request waits for its model to load or for room to load it (default 10m; then 503)"},
          {"--mmproj", nullptr, "PATH",
           "multimodal projector of the one model (its mmproj GGUF: gemma4v, qwen3vl_merger): requests may then send "
           "images (OpenAI image_url data URLs, Ollama images, Anthropic base64 image blocks)"},
          {"--no-mmproj", nullptr, nullptr,
           "with -hf: do not fetch and load the repository's projector (fetched by default, as llama.cpp does)",
           nullptr, "--no-mmproj-auto"},
          {"--image-min-tokens", nullptr, "N", "fewest tokens an image is resized to (default: the projector's)"},
          {"--image-max-tokens", nullptr, "N", "most tokens an image is resized to (default: the projector's)"},
          {"--media-max-bytes", nullptr, "SIZE",
           "largest media item of a request, decoded (default 64M; the body must also fit --max-body)"},
          {"--media-max-pixels", nullptr, "N", "largest decoded image in pixels (default 40000000)"},
          {"--help", "-h", nullptr, "show this help"},
      });
  const std::vector<FlagSpec> all_specs = cli::concat(cli::concat(specs, serve_log_flags()), serve_default_flags());
  auto args = cli::Args::parse("serve", argc, argv, 2, all_specs);
  if (!args.ok()) return cli::fail(args.error());
  if (args->has("--help")) {
    cli::print_usage("serve",
                     "MODEL | -m MODEL | -hf REPO[:QUANT] | --model NAME=PATH|NAME=REPO[:QUANT] ... | --models DIR "
                     "[--host 127.0.0.1] [--port 8000] [--mem SIZE|auto] [--ctx N] [--api-key KEY] [--slots N]",
                     all_specs,
                     "Serves models over HTTP: the OpenAI, Ollama and Anthropic APIs, a web UI at /, Prometheus "
                     "metrics at /metrics, one log line per request on stderr. MODEL is a GGUF file or a store name "
                     "(OWNER/NAME[:QUANT], pulled if needed).");
    return 0;
  }
  if (Status st =
          args->check_positionals(args->has("--model") || args->has("--models") || args->has("--hf-repo") ? 0 : 1,
                                  "one MODEL (a GGUF file or a store name); more with --model NAME=PATH");
      !st.ok()) {
    return cli::fail(st.error());
  }
  std::vector<ModelSource> sources;
  if (args->has("--models")) {
    auto found = scan_models_dir(args->get_string("--models"));
    if (!found.ok()) return cli::fail(found.error());
    sources = std::move(found).value();
  }
  std::vector<std::string> model_flags = args->get_all("--model");
  if (!args->positionals().empty()) model_flags.push_back(args->positionals().front());
  for (const std::string& flag : model_flags) {
    auto spec = resolve_model_flag(flag, *args);
    if (!spec.ok()) return cli::fail(spec.error());
    auto src = parse_model_spec(*spec);
    if (!src.ok()) return cli::fail(src.error());
    sources.push_back(std::move(src).value());
  }
  std::string hub_mmproj;        // the projector -hf fetched beside its model
  if (args->has("--hf-repo")) {  // -hf REPO[:QUANT]: pulled into the store if needed, then one more source
    auto pulled =
        pull_hub_model(args->get_string("--hf-repo"), *args, cli::wants_hub_mmproj(*args) ? &hub_mmproj : nullptr);
    if (!pulled.ok()) return cli::fail(pulled.error());
    auto src = parse_model_spec(*pulled);
    if (!src.ok()) return cli::fail(src.error());
    sources.push_back(std::move(src).value());
  }
  if (Status st = check_unique_names(sources); !st.ok()) return cli::fail(st.error());
  const bool pinned =
      sources.size() == 1 && !args->has("--models") && !args->has("--keep-alive") && !args->has("--max-loaded");
  if (args->has("--alias")) {
    if (sources.size() != 1)
      return cli::fail(make_error("--alias names a single model; name several with --model NAME=PATH"));
    auto names = parse_aliases(args->get_all("--alias"));
    if (!names.ok()) return cli::fail(names.error());
    // The first plain name becomes the id the server reports; the others (and '*') are aliases.
    for (const std::string& n : *names) {
      if (n != kAnyModelAlias && sources[0].aliases.empty() && sources[0].name == model_id_from_path(sources[0].path)) {
        sources[0].name = n;
      } else {
        sources[0].aliases.push_back(n);
      }
    }
  }
  cli::print_compat_notes(*args);
  ModelPoolOptions po;
  auto max_loaded = args->get_int("--max-loaded", 1, 1, 256);
  if (!max_loaded.ok()) return cli::fail(max_loaded.error());
  po.max_loaded = static_cast<int>(*max_loaded);
  auto keep_alive = parse_duration_s(args->get_string("--keep-alive", "5m"), "--keep-alive");
  if (!keep_alive.ok()) return cli::fail(keep_alive.error());
  po.keep_alive_s = *keep_alive;
  auto load_timeout = parse_duration_s(args->get_string("--load-timeout", "10m"), "--load-timeout");
  if (!load_timeout.ok()) return cli::fail(load_timeout.error());
  if (!(*load_timeout > 0)) return cli::fail(make_error("--load-timeout must be positive"));
  po.load_timeout_s = *load_timeout;
  ServerOptions so;
  so.host = args->get_string("--host", "127.0.0.1");
  auto port = args->get_int("--port", 8000, 0, 65535);
  if (!port.ok()) return cli::fail(port.error());
  so.port = static_cast<int>(*port);
  so.api_key = args->get_string("--api-key");
  if (args->has("--api-key") && so.api_key.empty()) return cli::fail(make_error("--api-key must not be empty"));
  for (const std::string& list : args->get_all("--allowed-hosts")) {
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      so.allowed_hosts.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  so.cors_origins = args->get_all("--cors-origin");
  {
    GuardOptions guard{so.host, so.allowed_hosts, so.cors_origins};
    if (Status st = normalise_guard_options(&guard); !st.ok()) return cli::fail(st.error());
  }
  auto slots = args->get_int("--slots", 1, 1, 256);
  if (!slots.ok()) return cli::fail(slots.error());
  so.n_slots = static_cast<int>(*slots);
  if (args->has("--parallel")) {  // llama-server's -np for --slots
    auto parallel = args->get_int("--parallel", 1, 1, 256);
    if (!parallel.ok()) return cli::fail(parallel.error());
    so.n_slots = static_cast<int>(*parallel);
  }
  auto queue = args->get_int("--queue", 16, 0, 65536);
  if (!queue.ok()) return cli::fail(queue.error());
  so.queue_capacity = static_cast<int>(*queue);
  so.context_dir = args->get_string("--context-dir");
  if (args->has("--context-compression")) {
    auto c = parse_context_compression(args->get_string("--context-compression"));
    if (!c.ok()) return cli::fail(c.error());
    so.context_compression = *c;
  }
  if (args->has("--max-body")) {
    auto bytes = parse_size(args->get_string("--max-body"));
    if (!bytes.ok()) return cli::fail(bytes.error());
    so.max_body_bytes = static_cast<size_t>(*bytes);
  }
  so.model_id = sources[0].name;
  so.model_aliases = sources[0].aliases;
  auto timeout = args->get_float("--timeout", 30, 0.1, 3600);
  if (!timeout.ok()) return cli::fail(timeout.error());
  so.timeout_s = *timeout;
  auto header_timeout = args->get_float("--header-timeout", 10, 0.1, 3600);
  if (!header_timeout.ok()) return cli::fail(header_timeout.error());
  so.header_timeout_s = *header_timeout;
  auto max_conn = args->get_int("--max-connections", 1024, 1, 65536);
  if (!max_conn.ok()) return cli::fail(max_conn.error());
  so.max_connections = static_cast<size_t>(*max_conn);
  auto max_per_client = args->get_int("--max-connections-per-client", 128, 1, 65536);
  if (!max_per_client.ok()) return cli::fail(max_per_client.error());
  so.max_connections_per_client = static_cast<size_t>(*max_per_client);
  if (Status st = request_options_from_args(*args, &so); !st.ok()) return cli::fail(st.error());

  auto lo = cli::load_options_from_args(*args);
  if (!lo.ok()) return cli::fail(lo.error());
  auto threads = args->get_int("--threads", 0, 0, 1024);
  if (!threads.ok()) return cli::fail(threads.error());
  so.session.n_threads = static_cast<int>(*threads);
  so.session.n_ctx = lo->n_ctx;
  // Prompt chunks stay short by default: the scheduler runs one chunk of one slot between the
  // decode steps of the others, and a long chunk would stall them.
  if (lo->batch == 0) lo->batch = kShortPromptChunk;
  so.session.batch = lo->batch;
  so.session.kv_type = lo->kv_type;
  auto checkpoints = cli::parse_checkpoint_count(args->get_string("--ctx-checkpoints", "auto"));
  if (!checkpoints.ok()) return cli::fail(checkpoints.error());
  auto every = args->get_int("--checkpoint-every", 512, 1, int64_t{1} << 24);
  if (!every.ok()) return cli::fail(every.error());
  so.session.checkpoint_interval = *every;
  auto spec = cli::parse_spec_args(*args);
  if (!spec.ok()) return cli::fail(spec.error());
  if (spec->kind == cli::SpecKind::kMtp) {
    lo->load_mtp = true;  // models with an MTP block load it resident; the others decode plainly
    so.spec_mtp = true;
  }
  if (spec->kind == cli::SpecKind::kDraftModel) {
    // A draft drafts for one target, loaded for the server's whole life (its slots' draft
    // sessions are made with the target's).
    if (sources.size() != 1 || args->has("--models")) {
      return cli::fail(make_error(
          "-md/--model-draft drafts for one target model, but this server serves %s (--models "
          "DIR or several --model): serve the draft's target alone with -m FILE",
          sources.size() == 1 ? "a directory of models" : (std::to_string(sources.size()) + " models").c_str()));
    }
    if (!pinned) {
      return cli::fail(
          make_error("-md/--model-draft keeps the target loaded while the server runs: drop --keep-alive "
                     "and --max-loaded"));
    }
    if (Status st = cli::reserve_draft_share(spec->draft_mem_bytes, &lo->mem_bytes); !st.ok())
      return cli::fail(st.error());
  }
  so.spec_ngram_size = spec->ngram_size;
  so.spec = spec->config;
  lo->n_sessions = so.n_slots;  // every slot holds a KV cache: the plan budgets all of them
  // And the scheduler's batched pass (Scheduler::create): a decode row per slot, or the pending
  // token and drafts of each slot that verifies in the pass (n-gram lookup, a draft model).
  const bool spec_in_pass = spec->kind == cli::SpecKind::kNgram || spec->kind == cli::SpecKind::kDraftModel;
  lo->batch_pass_rows = pass_rows(lo->batch, so.n_slots, spec_in_pass ? 1 + spec->config.draft_max : 1);
  lo->n_logit_rows = spec->logit_rows();  // and its verification pass's logits
  lo->n_checkpoints = *checkpoints;       // and its checkpoints (none for a model that can rewind)
  if (*checkpoints != kAutoCheckpoints) lo->n_checkpoints = std::max(*checkpoints, spec->checkpoints());
  so.context_shift = args->has("--context-shift");
  so.content_special_tokens = args->has("--content-special-tokens");
  if (args->has("--pooling")) {
    auto pooling = parse_pooling(args->get_string("--pooling"));
    if (!pooling.ok()) return cli::fail(make_error("--%s", pooling.error().message.c_str()));
    so.pooling = *pooling;
  }
  auto keep = args->get_int("--keep", 0, -1, int64_t{1} << 24);
  if (!keep.ok()) return cli::fail(keep.error());
  so.n_keep = *keep;
  if (so.context_shift && spec->enabled()) {
    return cli::fail(
        make_error("--context-shift with speculative decoding (--spec-type) is not supported: drop one of them"));
  }
  // --mmproj: the one model's projector, planned with it (its share comes off --mem first).
  std::unique_ptr<Mmproj> mmproj;
  if (!hub_mmproj.empty() && !pinned) {
    std::fprintf(stderr, "note: the projector %s fetched with -hf is not loaded: it goes with a single model\n",
                 hub_mmproj.c_str());
    hub_mmproj.clear();
  }
  if (args->has("--mmproj") && args->has("--no-mmproj"))
    return cli::fail(make_error("--mmproj and --no-mmproj contradict each other: drop one"));
  if (args->has("--mmproj") || !hub_mmproj.empty()) {
    if (!pinned) {
      return cli::fail(
          make_error("--mmproj goes with a single model (-m FILE): it is that model's projector, not every model's"));
    }
    auto loaded_mmproj = cli::load_mmproj_for_model(*args, sources[0].path, &*lo, nullptr, hub_mmproj);
    if (!loaded_mmproj.ok()) return cli::fail(loaded_mmproj.error());
    mmproj = std::move(loaded_mmproj).value();
    so.mmproj = mmproj.get();
  } else {
    for (const char* flag : {"--image-min-tokens", "--image-max-tokens", "--media-max-bytes", "--media-max-pixels"}) {
      if (args->has(flag)) return cli::fail(make_error("%s needs --mmproj PATH (the model's projector)", flag));
    }
  }
  po.mem_bytes = lo->mem_bytes;
  const std::string routing_bias = args->get_string("--routing-bias");
  // Loads one model for a budget (the pool's share of --mem, or all of it when pinned).
  const ModelLoadOptions base_lo = *lo;
  const bool context_shift = so.context_shift;
  // The model loaded before listening shows its load on a terminal (models loaded on demand later
  // do not: their lines would cut into the request log).
  cli::ProgressLine load_line;
  ModelFileLoader loader = [base_lo, routing_bias, context_shift, pinned, &load_line](
                               const ModelSource& source, uint64_t mem_bytes,
                               SessionOptions* session) -> Result<std::unique_ptr<Model>> {
    ModelLoadOptions o = base_lo;
    o.mem_bytes = mem_bytes;
    if (pinned) o.progress = cli::load_progress(load_line, std::filesystem::path(source.path).filename().string());
    auto loaded = Model::load(source.path, o);
    load_line.clear();
    SNIPER_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, std::move(loaded));
    if (context_shift) SNIPER_TRY(context_shift_support(model->config()));  // refuses recurrent / sliding models
    session->n_checkpoints = model->plan().n_checkpoints;
    if (!routing_bias.empty()) {
      SNIPER_ASSIGN_OR_RETURN(session->routing_bias, cli::parse_routing_bias(routing_bias, model->config()));
    }
    return model;
  };
  std::unique_ptr<Model> draft_model;   // -md FILE: shared by the slots; outlives the server
  std::unique_ptr<Model> pinned_model;  // -m FILE: loaded now, before listening
  // Under mpirun (cli/cluster_args.h): the other ranks' experts, which the slots' sessions and the
  // batched pass route through; the serving ranks never get past join_model_parallel.
  std::unique_ptr<RemoteExperts> remote_experts;
  Cluster* cluster = cli::current_cluster();
  if (cluster != nullptr && !pinned) {
    const Error e = make_error(
        "under mpirun, serve takes one model loaded for the server's life (-m FILE, no --models, --keep-alive "
        "or --max-loaded): every rank holds a share of it");
    cli::refuse_start(*cluster, e.message);
    return cli::fail(e);
  }
  if (pinned) {
    auto model = loader(sources[0], lo->mem_bytes, &so.session);
    if (cluster != nullptr) {
      // A pass holds at most a prompt chunk (or verification) plus a decode row per slot.
      auto remote = cli::join_model_parallel(*cluster, *args, sources[0].path, model, so.session.n_threads,
                                             so.session.batch + so.n_slots);
      if (!remote.ok()) return cli::fail(remote.error());
      remote_experts = std::move(remote).value();
      so.session.remote_experts = remote_experts.get();
      so.degraded = [cluster] { return cluster->lost_reason(); };
    }
    if (!model.ok()) return cli::fail(model.error());
    pinned_model = std::move(model).value();
    if (spec->kind == cli::SpecKind::kMtp && pinned_model->config().n_nextn_layers <= 0) {
      return cli::fail(
          make_error("--spec-type mtp: %s has no multi-token-prediction block (nextn_predict_layers); "
                     "use --spec-type ngram or -md DRAFT_MODEL",
                     sources[0].path.c_str()));
    }
  }
  if (spec->kind == cli::SpecKind::kDraftModel) {
    // Planned for one draft session (KV cache) per slot, of the slots' context, within --mem-draft.
    const int64_t n_ctx = so.session.n_ctx > 0 ? so.session.n_ctx : pinned_model->planned_n_ctx();
    auto draft = cli::load_draft_model(*spec, *pinned_model, n_ctx, so.n_slots);
    if (!draft.ok()) return cli::fail(draft.error());
    draft_model = std::move(draft).value();
    so.draft_model = draft_model.get();
    const MemoryPlan& dp = draft_model->plan();
    std::fprintf(stderr, "sniper serve: draft model %s, %s, %.1f MiB planned (%.1f MiB KV for %d slot(s)) in %s\n",
                 spec->draft_path.c_str(), draft_model->streams() ? "streamed" : "resident",
                 static_cast<double>(dp.planned_bytes()) / 1048576.0, static_cast<double>(dp.kv_bytes) / 1048576.0,
                 so.n_slots,
                 spec->draft_mem_bytes > 0 ? "--mem-draft, taken off --mem" : "no budget (--mem-draft unset)");
  }

  // Block the stop signals in every thread (the server's threads inherit the mask); one thread
  // waits for them and stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Every connection has its own thread, and glibc gives threads their own malloc arenas. With
  // the default dynamic mmap threshold, freeing one large request body (up to --max-body) raises
  // the threshold, later bodies come from the arenas and stay there: RSS grew ~40% in the soak
  // test (tests/js/soak_test.mjs) without any leak. Pinning the threshold at its initial 128 KiB
  // keeps large transient buffers on mmap, returned on free (RSS within 10% after the soak).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  cli::lock_memory_if_asked(*args, /*future=*/!pinned);
  auto server = pinned ? HttpServer::create(*pinned_model, so) : HttpServer::create(sources, po, loader, so);
  if (!server.ok()) return cli::fail(server.error());
  auto bound = (*server)->bind();
  if (!bound.ok()) return cli::fail(bound.error());
  HttpServer* srv = server->get();
  std::thread waiter([srv, stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "sniper serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    srv->stop();
  });
  if (pinned) {
    std::fprintf(stderr, "sniper serve: model '%s', %d slot(s) of %ld tokens, context dir %s\n",
                 sources[0].name.c_str(), so.n_slots,
                 static_cast<long>(srv->models().acquire_if_loaded(sources[0].name)->model().scheduler->n_ctx()),
                 srv->context().contexts->dir().c_str());
  } else {
    std::fprintf(
        stderr,
        "sniper serve: %zu model(s) loaded on demand, at most %d at once in %.1f GiB, keep-alive %s, context dir %s\n",
        sources.size(), po.max_loaded, static_cast<double>(lo->mem_bytes) / (1u << 30),
        args->get_string("--keep-alive", "5m").c_str(), srv->context().contexts->dir().c_str());
  }
  if (!is_loopback_host(host_of(so.host).empty() ? so.host : host_of(so.host)) && so.api_key.empty()) {
    std::fprintf(stderr,
                 "sniper serve: warning: listening on %s without --api-key: anyone who can reach this address can use "
                 "the server (set --api-key KEY, or --host 127.0.0.1)\n",
                 so.host.c_str());
  }
  std::printf("sniper serve: listening on %s\n", listen_url(so.host, *bound).c_str());
  std::fflush(stdout);
  srv->run();
  srv->stop();
  // Wakes the waiter (blocked in sigwait for SIGINT/SIGTERM) if run() ended on its own; the
  // signal is blocked in every thread, so it terminates nothing.
  pthread_kill(waiter.native_handle(), SIGTERM);  // NOLINT(bugprone-bad-signal-to-kill-thread)
  waiter.join();
  return 0;
}

}  // namespace sniper::server
