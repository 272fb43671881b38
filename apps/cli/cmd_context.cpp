// SPDX-License-Identifier: MIT
// sniper context push|pull|list: copies saved contexts (the `serve --context-dir` store) to and
// from S3-compatible object storage (server/context_sync.h). The endpoint and credentials come
// from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION (or
// AWS_DEFAULT_REGION) and AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) for MinIO, R2 and the like.
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "commands.h"
#include "common.h"
#include "engine/session_state.h"
#include "gguf/reader.h"
#include "gguf/split.h"
#include "server/context_sync.h"

namespace sniper::cli {

int cmd_context(int argc, char** argv) {
  const std::vector<FlagSpec> specs = {
      {"--remote", nullptr, "URL", "s3://bucket/prefix to push to, pull from or list"},
      {"--context-dir", nullptr, "DIR", "the local context store (default: as `sniper serve`)"},
      {"--model", "-m", "PATH", "pull: refuse a context saved with another model than this GGUF"},
      {"--help", "-h", nullptr, "show this help"},
  };
  auto args = Args::parse("context", argc, argv, 2, specs);
  if (!args.ok()) return fail(args.error());
  const auto& pos = args->positionals();
  const std::string verb = pos.empty() ? "" : pos[0];
  const bool wants_name = verb == "push" || verb == "pull";
  if (args->has("--help")) {
    print_usage("context", "push NAME | pull NAME | list --remote s3://bucket/prefix", specs,
                "Moves saved contexts (sniper serve's /v1/context/save, sniper chat's /save) to and from S3-compatible "
                "object storage. Credentials and endpoint come from the AWS_* environment variables.");
    return 0;
  }
  if (!(wants_name || verb == "list") || pos.size() < (wants_name ? 2u : 1u)) {
    return fail(make_error("context takes push NAME, pull NAME or list (see 'sniper context --help')"));
  }
  if (Status st = args->check_positionals(wants_name ? 2 : 1, "push NAME, pull NAME or list"); !st.ok()) {
    return fail(st.error());
  }
  if (!args->has("--remote")) return fail(make_error("--remote s3://bucket/prefix is required"));
  auto where = parse_s3_url(args->get_string("--remote"));
  if (!where.ok()) return fail(where.error());
  auto config = s3_config_from_env();
  if (!config.ok()) return fail(config.error());
  server::ContextStore store(args->get_string("--context-dir", server::ContextStore::default_dir()));
  server::ContextSync sync(std::move(config).value(), *where);

  if (verb == "list") {
    auto remote = sync.list();
    if (!remote.ok()) return fail(remote.error());
    for (const server::RemoteContext& c : *remote) {
      std::printf("%-32s %14" PRIu64 " bytes  %s\n", c.name.c_str(), c.bytes, c.last_modified.c_str());
    }
    return 0;
  }
  const std::string& name = pos[1];
  std::optional<uint64_t> fingerprint;
  if (verb == "pull" && args->has("--model")) {
    auto file = gguf_open_model(args->get_string("--model"));
    if (!file.ok()) return fail(file.error());
    auto fp = model_fingerprint(*file);
    if (!fp.ok()) return fail(fp.error());
    fingerprint = *fp;
  }
  auto t = verb == "push" ? sync.push(store, name) : sync.pull(store, name, fingerprint);
  if (!t.ok()) return fail(t.error());
  std::printf("%s %s %s %s: %" PRIu64 " bytes, %" PRId64 " tokens, sha256 %s, %.1f ms\n",
              verb == "push" ? "pushed" : "pulled", name.c_str(), verb == "push" ? "to" : "from", t->url.c_str(),
              t->bytes, t->n_tokens, t->sha256.c_str(), t->ms);
  return 0;
}

}  // namespace sniper::cli
