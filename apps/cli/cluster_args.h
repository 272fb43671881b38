// SPDX-License-Identifier: MIT
// The CLI's side of running under `mpirun -np W sniper ...` (src/dist/): joining the job, the
// --parallel and --rank-timeout flags, the start-up agreement, and the serving ranks' life. Every
// rank runs the same command line; rank 0 runs the command, the others load the model, agree on
// it with rank 0 and serve it until rank 0 is done. The joined cluster is the process's one MPI
// world, so it is held here for the process (set once by main()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "args.h"
#include "dist/cluster.h"
#include "engine/model.h"

namespace sniper::cli {

// Joins the MPI job, if the process was started in one of several processes (once, from main()).
[[nodiscard]] Status join_cluster(int* argc, char*** argv);
// The joined cluster, or null in a single process.
Cluster* current_cluster();
// True if `command` can run under mpirun (the serving ranks follow load_model_and_session).
bool runs_distributed(const std::string& command);
// Ends the cluster at the end of main(): rank 0 tells the serving ranks to stop; MPI finalizes. A
// rank that never reached the start-up agreement (a bad flag, --help) takes part in it first,
// refusing, so no rank waits for it.
void leave_cluster();
// A rank that cannot get as far as loading the model: takes part in the start-up agreement with
// `why`, so every rank fails at once and rank 0 names this one (instead of waiting out the timeout).
void refuse_start(Cluster& cluster, const std::string& why);
// Every rank, right after Model::load (whatever its outcome), under mpirun: checks --parallel
// against the model, agrees at start-up with every rank (same file, flags, build; a rank's failed
// load fails all of them with its reason), then: a serving rank serves rank 0 and ends the
// process; rank 0 gets the RemoteExperts its sessions route through. max_rows: the most rows one
// of rank 0's passes holds (its batch; the server's batched pass adds a row per slot), which the
// serving ranks size their buffers for. Errors name the rank and host.
Result<std::unique_ptr<RemoteExperts>> join_model_parallel(Cluster& cluster, const Args& args,
                                                           const std::string& model_path,
                                                           const Result<std::unique_ptr<Model>>& model, int n_threads,
                                                           int64_t max_rows);

}  // namespace sniper::cli
