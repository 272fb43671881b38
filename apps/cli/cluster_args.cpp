// SPDX-License-Identifier: MIT
#include "cluster_args.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/cpu_features.h"
#include "dist/expert_parallel.h"
#include "kernels/kernels.h"

namespace sniper::cli {

namespace {

// The process's MPI world (see the header): set by join_cluster, ended by leave_cluster.
std::unique_ptr<Cluster>& the_cluster() {
  static std::unique_ptr<Cluster> cluster;
  return cluster;
}

// True once this rank took part in the start-up agreement.
bool& agreement_done() {
  static bool done = false;
  return done;
}

// True once the serving ranks agreed and serve (rank 0 then stops them at the end).
bool& ranks_serving() {
  static bool serving = false;
  return serving;
}

// Bumped when the wire format of src/dist changes.
constexpr int kProtocolVersion = 1;

std::string build_identity() {
  char text[128];
  std::snprintf(text, sizeof(text), "protocol %d, kernels %s", kProtocolVersion, isa_tier_name(selected_tier()));
  return text;
}

}  // namespace

Status join_cluster(int* argc, char*** argv) {
  SNIPER_ASSIGN_OR_RETURN(the_cluster(), Cluster::join(argc, argv));
  return ok_status();
}

Cluster* current_cluster() { return the_cluster().get(); }

bool runs_distributed(const std::string& command) {
  return command == "run" || command == "logits" || command == "serve" || command == "bench";
}

void refuse_start(Cluster& cluster, const std::string& why) {
  RankIdentity id;
  id.error = why;
  agreement_done() = true;
  (void)cluster.check_start(id);
}

void leave_cluster() {
  Cluster* c = current_cluster();
  if (c == nullptr) return;
  if (!agreement_done()) refuse_start(*c, "it stopped before loading the model (its own message is on its stderr)");
  if (c->rank() == 0 && ranks_serving()) {
    ClusterExperts experts(*c);
    Status st = experts.stop_all();
    if (!st.ok()) std::fprintf(stderr, "warning: %s\n", st.error().message.c_str());
  }
  the_cluster().reset();
}

Result<std::unique_ptr<RemoteExperts>> join_model_parallel(Cluster& cluster, const Args& args,
                                                           const std::string& model_path,
                                                           const Result<std::unique_ptr<Model>>& model, int n_threads,
                                                           int64_t max_rows) {
  RankIdentity id;
  const std::string mode = args.get_string("--distribute", "auto");
  auto timeout = args.get_int("--rank-timeout", 60, 1, 86400);
  if (mode != "experts" && mode != "layers" && mode != "auto") {
    id.error = "--distribute is '" + mode + "' but must be one of: experts, layers, auto";
  } else if (mode == "layers") {
    id.error =
        "--distribute layers (pipeline parallel) is not built yet (issue 44); MoE models run with --distribute experts";
  } else if (!timeout.ok()) {
    id.error = timeout.error().message;
  } else if (!model.ok()) {
    id.error = model.error().message;
  } else if ((*model)->config().n_experts == 0) {
    id.error = "--distribute " + mode + " divides routed experts among the ranks, but " + model_path +
               " has none (pipeline parallel for dense models is not built yet)";
  }
  if (timeout.ok()) cluster.set_rank_timeout(std::chrono::seconds(*timeout));
  if (model.ok()) {
    std::error_code ec;
    id.file_bytes = static_cast<uint64_t>(std::filesystem::file_size(model_path, ec));
    auto fp = file_fingerprint(model_path);
    if (fp.ok()) {
      id.fingerprint = *fp;
    } else if (id.error.empty()) {
      id.error = fp.error().message;
    }
  }
  id.flags = "parallel=experts";
  id.build = build_identity();
  agreement_done() = true;
  Status agreed = cluster.check_start(id);
  Result<int64_t> batch = agreed.ok() ? cluster.broadcast(max_rows) : Result<int64_t>(agreed.error());
  if (cluster.rank() == 0) {
    if (!batch.ok()) return batch.error();
    ranks_serving() = true;
    return std::unique_ptr<RemoteExperts>(std::make_unique<ClusterExperts>(cluster));
  }
  // A serving rank: rank 0 reports a failed agreement; this rank only says why it stops.
  int rc = 0;
  if (!batch.ok()) {
    std::fprintf(stderr, "rank %d (host %s): %s\n", cluster.rank(), cluster.host().c_str(),
                 batch.error().message.c_str());
    rc = 1;
  } else {
    Status st = serve_experts(cluster, **model, *batch, n_threads);
    if (!st.ok()) {
      std::fprintf(stderr, "rank %d (host %s): %s\n", cluster.rank(), cluster.host().c_str(),
                   st.error().message.c_str());
      rc = 1;
    }
  }
  the_cluster().reset();
  std::exit(rc);
}

}  // namespace sniper::cli
