// SPDX-License-Identifier: MIT
// Cluster in a build without MPI (SNIPER_MPI=OFF): a single process runs as always; a process an
// MPI launcher started among several is refused with the way to fix it.
#include <cstdlib>

#include "dist/cluster.h"

namespace sniper {

struct ClusterImpl {};

Cluster::Cluster(std::unique_ptr<ClusterImpl> impl) : impl_(std::move(impl)) {}
Cluster::~Cluster() = default;

Result<std::unique_ptr<Cluster>> Cluster::join(int*, char***) {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    const char* n = std::getenv(v);
    if (n != nullptr && std::atoi(n) > 1) {
      return make_error(
          "started by an MPI launcher as one of %s processes, but this sniper was built without MPI: "
          "install libopenmpi-dev and rebuild with -DSNIPER_MPI=ON",
          n);
    }
  }
  return std::unique_ptr<Cluster>();
}

namespace {
const std::string kNone = "?";
}

Status Cluster::checked(Status st) { return st; }
int Cluster::rank() const { return 0; }
int Cluster::size() const { return 1; }
const std::string& Cluster::host() const { return kNone; }
const std::string& Cluster::host_of(int) const { return kNone; }
void Cluster::set_rank_timeout(std::chrono::milliseconds) {}
std::chrono::milliseconds Cluster::rank_timeout() const { return std::chrono::milliseconds(0); }
std::string Cluster::lost_reason() const { return std::string(); }
Status Cluster::check_start(RankIdentity) { return make_error("built without MPI"); }
Result<int64_t> Cluster::broadcast(int64_t) { return make_error("built without MPI"); }
Status Cluster::send(int, int, const void*, size_t) { return make_error("built without MPI"); }
Result<size_t> Cluster::receive(int, int, void*, size_t) { return make_error("built without MPI"); }
Result<std::pair<int, size_t>> Cluster::wait_message(int) { return make_error("built without MPI"); }

}  // namespace sniper
