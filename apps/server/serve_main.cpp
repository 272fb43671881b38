// SPDX-License-Identifier: MIT
// `sniper serve -m MODEL [--host H] [--port P] [--api-key KEY] [--slots N] ...`: loads the
// model, starts the OpenAI-compatible HTTP server and prints exactly one line to stdout when
// it accepts connections: "sniper serve: listening on http://HOST:PORT/". SIGINT and SIGTERM
// stop it cleanly (exit 0). (`sniper top` lives in top.cpp.)
#include "server/serve_main.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "base/memory_limit.h"
#include "cli/common.h"
#include "server/http_server.h"
#include "server/server_context.h"

namespace sniper::server {

int serve_main(int argc, char** argv) {
  using cli::FlagSpec;
  const std::vector<FlagSpec> specs = cli::concat(cli::concat(cli::model_flags(), cli::context_shift_flags()), {
      {"--host", nullptr, "ADDR", "address to listen on (default 127.0.0.1; 0.0.0.0 exposes the server to the network)"},
      {"--port", nullptr, "N", "port (default 8000; 0 = pick a free port)"},
      {"--api-key", nullptr, "KEY", "require 'Authorization: Bearer KEY' on every request except GET / and /health"},
      {"--slots", nullptr, "N", "requests served at once, each with its own KV cache of --ctx tokens, all inside --mem (default 1)"},
      {"--queue", nullptr, "N", "requests waiting for a slot before the server answers 503 (default 16)"},
      {"--ctx-checkpoints", nullptr, "N|auto", "state checkpoints per slot for prefix reuse on hybrid models (delta-net layers, sliding windows), counted in --mem; 0 = none (default auto: 8, fewer if 8 per slot take over 1/8 of --mem)"},
      {"--checkpoint-every", nullptr, "N", "tokens of a prompt between two state checkpoints (default 512)"},
      {"--context-compression", nullptr, "TYPE", "none|q8_0|q4_0: KV rows of saved contexts exact (f16/q8_0 as the cache, default) or quantized (smaller, lossy)"},
      {"--context-dir", nullptr, "DIR", "where /v1/context/save stores KV states (default $XDG_CACHE_HOME/sniper/contexts or ~/.cache/sniper/contexts)"},
      {"--max-body", nullptr, "SIZE", "largest request body (default 4M; larger -> 413)"},
      {"--timeout", nullptr, "S", "seconds to receive a request body and for each write of a response (default 30; -> 408 / close)"},
      {"--header-timeout", nullptr, "S", "seconds for a request's headers to arrive, from the connection or a later request's first byte (default 10; -> 408)"},
      {"--max-connections", nullptr, "N", "open connections in total; more are answered 503 at once (default 1024)"},
      {"--max-connections-per-client", nullptr, "N", "open connections per client address; more are answered 503 at once (default 128)"},
      {"--alias", nullptr, "NAME", "model id to report (default: the file name without .gguf)"},
      {"--help", "-h", nullptr, "show this help"},
  });
  auto args = cli::Args::parse("serve", argc, argv, 2, specs);
  if (!args.ok()) return cli::fail(args.error());
  if (args->has("--help")) {
    cli::print_usage("serve", "-m MODEL [--host 127.0.0.1] [--port 8000] [--mem SIZE|auto] [--ctx N] [--api-key KEY] [--slots N]", specs);
    return 0;
  }
  if (!args->has("--model")) return cli::fail(make_error("no model given: pass -m PATH to a GGUF file"));
  ServerOptions so;
  so.host = args->get_string("--host", "127.0.0.1");
  auto port = args->get_int("--port", 8000, 0, 65535);
  if (!port.ok()) return cli::fail(port.error());
  so.port = static_cast<int>(*port);
  so.api_key = args->get_string("--api-key");
  if (args->has("--api-key") && so.api_key.empty()) return cli::fail(make_error("--api-key must not be empty"));
  auto slots = args->get_int("--slots", 1, 1, 256);
  if (!slots.ok()) return cli::fail(slots.error());
  so.n_slots = static_cast<int>(*slots);
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
  so.model_id = args->get_string("--alias");
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
  lo->n_sessions = so.n_slots;  // every slot holds a KV cache: the plan budgets all of them
  lo->n_checkpoints = *checkpoints;  // and its checkpoints (none for a model that can rewind)
  auto model = Model::load(args->get_string("--model"), *lo);
  if (!model.ok()) return cli::fail(model.error());
  so.session.n_checkpoints = (*model)->plan().n_checkpoints;
  auto keep = cli::context_shift_from_args(*args, (*model)->config(), &so.context_shift);
  if (!keep.ok()) return cli::fail(keep.error());
  so.n_keep = *keep;
  if (args->has("--routing-bias")) {
    auto bias = cli::parse_routing_bias(args->get_string("--routing-bias"), (*model)->config());
    if (!bias.ok()) return cli::fail(bias.error());
    so.session.routing_bias = *bias;
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
  auto server = HttpServer::create(**model, so);
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
  std::fprintf(stderr, "sniper serve: model '%s', %d slot(s) of %ld tokens, context dir %s\n",
               srv->context().model_id.c_str(), so.n_slots, static_cast<long>(srv->context().scheduler->n_ctx()),
               srv->context().contexts->dir().c_str());
  std::printf("sniper serve: listening on http://%s:%d/\n", so.host.c_str(), *bound);
  std::fflush(stdout);
  srv->run();
  srv->stop();
  pthread_kill(waiter.native_handle(), SIGTERM);  // wakes the waiter if run() ended on its own
  waiter.join();
  return 0;
}

}  // namespace sniper::server
