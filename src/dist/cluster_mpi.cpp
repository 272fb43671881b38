// SPDX-License-Identifier: MIT
// Cluster over MPI (SNIPER_MPI=ON). Every operation that waits on another rank is non-blocking
// underneath (MPI_Isend / MPI_Irecv / MPI_Igather / MPI_Ibcast) and polled against a deadline,
// so a rank that died or hangs turns into an Error naming it; MPI_ERRORS_RETURN makes MPI's own
// failures return too. Polling spins for a short while, then sleeps between tests, so an idle
// serving rank does not hold a core.
#include <mpi.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <mutex>
#include <thread>

#include "dist/cluster.h"
#include "dist/rank_identity.h"

namespace sniper {

struct ClusterImpl {
  int rank = 0;
  int size = 1;
  std::string host;
  std::vector<std::string> hosts;
  std::chrono::milliseconds timeout{60000};
  // A wait failed or timed out: finalizing could wait on the lost rank forever. Written by the
  // thread calling MPI, read by any (lost_reason).
  mutable std::mutex mu;
  bool broken = false;
  std::string lost;  // the first failure's message
};

namespace {

const std::string kUnknownHost = "?";

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

// Polls `req` until it completes or `timeout` passes: spins for about 1 ms, then sleeps 50 us
// between tests (sleeping at once would add its latency to every layer of a decode step).
// `what` names the operation and the peer for the error. On a timeout the request is cancelled.
Status wait_for(MPI_Request& req, std::chrono::milliseconds timeout, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  const auto spin_until = start + std::chrono::milliseconds(1);
  for (;;) {
    int done = 0;
    const int rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return make_error("%s failed: %s", what.c_str(), mpi_error_text(rc).c_str());
    if (done) return ok_status();
    const auto now = Clock::now();
    if (now >= deadline) {
      MPI_Cancel(&req);
      MPI_Request_free(&req);
      return make_error("%s: no answer within the rank timeout of %.1f s (the rank died, hangs or lost its network)",
                        what.c_str(), static_cast<double>(timeout.count()) / 1000.0);
    }
    if (now >= spin_until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

Cluster::Cluster(std::unique_ptr<ClusterImpl> impl) : impl_(std::move(impl)) {}

Cluster::~Cluster() {
  // MPI_Finalize synchronizes with every rank; after a lost rank, abort the job instead (the
  // error naming the rank has been reported).
  if (!lost_reason().empty()) {
    MPI_Abort(MPI_COMM_WORLD, 1);
  } else {
    MPI_Finalize();
  }
}

Result<std::unique_ptr<Cluster>> Cluster::join(int* argc, char*** argv) {
  if (!launched_by_mpi()) return std::unique_ptr<Cluster>();
  int provided = 0;
  // MPI_Init starts the library's own threads; they inherit the stop signals blocked, so SIGINT
  // and SIGTERM reach this process's threads (the server's sigwait, the CLI's interrupt handler)
  // instead of killing it by their default action in a thread that does not handle them.
  sigset_t stop_signals, before;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &before);
  // SERIALIZED: the server's scheduler thread runs the passes, the main thread joins and leaves.
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (rc != MPI_SUCCESS) return make_error("MPI failed to start: %s", mpi_error_text(rc).c_str());
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return make_error("this MPI library does not support MPI_THREAD_SERIALIZED (it provides level %d)", provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto impl = std::make_unique<ClusterImpl>();
  MPI_Comm_rank(MPI_COMM_WORLD, &impl->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &impl->size);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  impl->host.assign(name, static_cast<size_t>(len));
  impl->hosts.assign(static_cast<size_t>(impl->size), kUnknownHost);
  impl->hosts[static_cast<size_t>(impl->rank)] = impl->host;
  std::unique_ptr<Cluster> c(new Cluster(std::move(impl)));
  if (c->size() == 1) return std::unique_ptr<Cluster>();  // ~Cluster finalizes
  return c;
}

Status Cluster::checked(Status st) {
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (!impl_->broken) impl_->lost = st.error().message;
    impl_->broken = true;
  }
  return st;
}

std::string Cluster::lost_reason() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->lost;
}

int Cluster::rank() const { return impl_->rank; }
int Cluster::size() const { return impl_->size; }
const std::string& Cluster::host() const { return impl_->host; }
const std::string& Cluster::host_of(int r) const {
  return r >= 0 && r < impl_->size ? impl_->hosts[static_cast<size_t>(r)] : kUnknownHost;
}
void Cluster::set_rank_timeout(std::chrono::milliseconds timeout) { impl_->timeout = timeout; }
std::chrono::milliseconds Cluster::rank_timeout() const { return impl_->timeout; }

Status Cluster::check_start(RankIdentity mine) {
  mine.host = impl_->host;
  const WireIdentity w = to_wire(mine);
  std::vector<WireIdentity> all(impl_->rank == 0 ? static_cast<size_t>(impl_->size) : 0);
  MPI_Request req;
  int rc = MPI_Igather(&w, sizeof(w), MPI_BYTE, all.data(), sizeof(w), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return checked(make_error("start-up check: gather failed: %s", mpi_error_text(rc).c_str()));
  SNIPER_TRY(checked(wait_for(req, impl_->timeout, "start-up check: gathering every rank's model file and flags")));
  char verdict[1024] = {};
  if (impl_->rank == 0) {
    std::vector<RankIdentity> ids;
    for (const WireIdentity& one : all) ids.push_back(from_wire(one));
    for (size_t r = 0; r < ids.size(); ++r) impl_->hosts[r] = ids[r].host;
    const std::string diff = compare_identities(ids);
    std::snprintf(verdict, sizeof(verdict), "%s", diff.c_str());
  }
  // The verdict and every rank's host, so all ranks fail together and name hosts alike.
  rc = MPI_Ibcast(verdict, sizeof(verdict), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return checked(make_error("start-up check: broadcast failed: %s", mpi_error_text(rc).c_str()));
  SNIPER_TRY(checked(wait_for(req, impl_->timeout, "start-up check: waiting for rank 0's verdict")));
  if (verdict[0] != '\0') return make_error("start-up check failed: %s", verdict);
  std::vector<WireIdentity> hosts(static_cast<size_t>(impl_->size));
  if (impl_->rank == 0) hosts = all;
  rc = MPI_Ibcast(hosts.data(), static_cast<int>(hosts.size() * sizeof(WireIdentity)), MPI_BYTE, 0, MPI_COMM_WORLD,
                  &req);
  if (rc != MPI_SUCCESS) return checked(make_error("start-up check: broadcast failed: %s", mpi_error_text(rc).c_str()));
  SNIPER_TRY(checked(wait_for(req, impl_->timeout, "start-up check: waiting for the host list")));
  for (size_t r = 0; r < hosts.size(); ++r) impl_->hosts[r] = from_wire(hosts[r]).host;
  return ok_status();
}

Result<int64_t> Cluster::broadcast(int64_t value) {
  MPI_Request req;
  const int rc = MPI_Ibcast(&value, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return checked(make_error("broadcast failed: %s", mpi_error_text(rc).c_str())).error();
  SNIPER_TRY(checked(wait_for(req, impl_->timeout, "waiting for rank 0's broadcast")));
  return value;
}

Status Cluster::send(int to, int tag, const void* data, size_t n_bytes) {
  if (n_bytes > static_cast<size_t>(INT32_MAX)) return make_error("a message of %zu bytes is too large", n_bytes);
  MPI_Request req;
  const std::string what = "sending to rank " + std::to_string(to) + " (host " + host_of(to) + ")";
  const int rc = MPI_Isend(data, static_cast<int>(n_bytes), MPI_BYTE, to, tag, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return checked(make_error("%s failed: %s", what.c_str(), mpi_error_text(rc).c_str()));
  return checked(wait_for(req, impl_->timeout, what));
}

Result<size_t> Cluster::receive(int from, int tag, void* buf, size_t cap) {
  if (cap > static_cast<size_t>(INT32_MAX)) return make_error("a receive buffer of %zu bytes is too large", cap);
  MPI_Request req;
  const std::string what = "waiting for rank " + std::to_string(from) + " (host " + host_of(from) + ")";
  int rc = MPI_Irecv(buf, static_cast<int>(cap), MPI_BYTE, from, tag, MPI_COMM_WORLD, &req);
  if (rc != MPI_SUCCESS) return checked(make_error("%s failed: %s", what.c_str(), mpi_error_text(rc).c_str())).error();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto spin_until = start + std::chrono::milliseconds(1);
  MPI_Status st;
  for (;;) {
    int done = 0;
    rc = MPI_Test(&req, &done, &st);
    if (rc != MPI_SUCCESS)
      return checked(make_error("%s failed: %s", what.c_str(), mpi_error_text(rc).c_str())).error();
    if (done) break;
    const auto now = Clock::now();
    if (now - start >= impl_->timeout) {
      MPI_Cancel(&req);
      MPI_Request_free(&req);
      return checked(make_error(
                         "%s: no answer within the rank timeout of %.1f s (the rank died, hangs or lost its network)",
                         what.c_str(), static_cast<double>(impl_->timeout.count()) / 1000.0))
          .error();
    }
    if (now >= spin_until) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  int count = 0;
  MPI_Get_count(&st, MPI_BYTE, &count);
  return static_cast<size_t>(count);
}

Result<std::pair<int, size_t>> Cluster::wait_message(int from) {
  using Clock = std::chrono::steady_clock;
  auto last_busy = Clock::now();
  for (;;) {
    int flag = 0;
    MPI_Status st;
    const int rc = MPI_Iprobe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (rc != MPI_SUCCESS)
      return checked(make_error("waiting for rank %d failed: %s", from, mpi_error_text(rc).c_str())).error();
    if (flag) {
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      return std::make_pair(st.MPI_TAG, static_cast<size_t>(count));
    }
    // Spin while requests come layer after layer; once idle for 5 ms, sleep between probes.
    if (Clock::now() - last_busy > std::chrono::milliseconds(5)) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
}

}  // namespace sniper
