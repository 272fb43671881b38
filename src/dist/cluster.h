// SPDX-License-Identifier: MIT
// Cluster: the processes an `mpirun -np W sniper ...` (or Slurm's srun) started, over MPI. Rank 0
// runs the front end (CLI, server, bench); the other ranks serve it (dist/expert_parallel.h).
// MPI's error handler is set to return errors, and every wait on another rank is bounded by the
// rank timeout, so a dead or hung rank becomes an Error naming it and its host, never a hang or an
// abort. One thread at a time calls into a Cluster (MPI_THREAD_SERIALIZED): the one that joined,
// or the server's scheduler thread between the start-up agreement and the end.
// A build without MPI (SNIPER_MPI=OFF) has the same interface: join() finds no cluster in a
// single process and refuses one launched by mpirun with a clear error.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"

namespace sniper {

// What every rank must agree on before serving: the model file, the flags that change what
// ranks compute, the build. Compared field by field on rank 0 (check_start).
struct RankIdentity {
  std::string host;          // filled by the cluster
  uint64_t file_bytes = 0;   // the GGUF's size (first part of a split set)
  uint64_t fingerprint = 0;  // file_fingerprint() of it
  std::string flags;         // the flags that matter, as "name=value ..."
  std::string build;         // version, protocol, kernel tier
  std::string error;         // why this rank could not load the model ("" = it did)
};

// A 64-bit fingerprint of a file: FNV-1a over its first 4 MiB (the GGUF header, metadata and
// tensor table) and 16 spread 64 KiB samples of the rest, with its size. Reads about 5 MiB.
Result<uint64_t> file_fingerprint(const std::string& path);

struct ClusterImpl;

class Cluster {
 public:
  // Joins the MPI job this process was started in. Null (no error) when the process was not
  // started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE, PMIX_RANK unset) or the job has
  // one process. Errors: MPI failed to start, or this build has no MPI and the launcher started
  // several processes. Call once per process, before other threads start.
  static Result<std::unique_ptr<Cluster>> join(int* argc, char*** argv);
  // MPI_Finalize; after a failed or timed-out wait on another rank, MPI_Abort instead (finalizing
  // synchronizes with every rank, the lost one too).
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int rank() const;
  int size() const;
  const std::string& host() const;
  // The host of rank r (after check_start; "?" before).
  const std::string& host_of(int r) const;
  // Every wait on another rank gives up after this long (default 60 s).
  void set_rank_timeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds rank_timeout() const;
  // "" while every wait on another rank succeeded; after one failed or timed out, its error
  // (naming the rank and host). The cluster stays broken: MPI cannot re-admit a lost rank
  // (Open MPI 4.1 has no ULFM). Thread-safe (the server's health check reads it).
  std::string lost_reason() const;

  // Start-up agreement, called by every rank: rank 0 gathers the identities and compares each
  // with its own. OK on every rank when all agree; otherwise every rank gets the same error,
  // naming the first differing rank, its host and the field ("rank 2 (host b) has a different
  // model file: ..."). `mine.host` is filled in.
  [[nodiscard]] Status check_start(RankIdentity mine);
  // Sends `value` from rank 0 to every rank (e.g. the front end's batch), bounded by the timeout.
  [[nodiscard]] Result<int64_t> broadcast(int64_t value);

  // Point-to-point, bounded by the timeout; errors name the peer rank and host.
  // send: the bytes are copied before return only once it completes (it waits for completion).
  [[nodiscard]] Status send(int to, int tag, const void* data, size_t n_bytes);
  // Receives one message of at most cap bytes from `from` into buf; returns its size.
  [[nodiscard]] Result<size_t> receive(int from, int tag, void* buf, size_t cap);
  // Serving ranks: waits without a deadline for the next message from rank 0 (sleeping between
  // polls once idle), returns its tag and size; the message is then read with receive().
  [[nodiscard]] Result<std::pair<int, size_t>> wait_message(int from);

 private:
  explicit Cluster(std::unique_ptr<ClusterImpl> impl);
  // st, marking the cluster broken when it is an error.
  Status checked(Status st);
  std::unique_ptr<ClusterImpl> impl_;
};

}  // namespace sniper
