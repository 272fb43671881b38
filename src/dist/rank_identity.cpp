// SPDX-License-Identifier: MIT
// The start-up agreement's pieces shared by the MPI and no-MPI builds: the file fingerprint and
// the comparison of every rank's identity with rank 0's.
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "dist/cluster.h"
#include "dist/rank_identity.h"

namespace sniper {

namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t fnv1a(uint64_t h, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

}  // namespace

Result<uint64_t> file_fingerprint(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return make_error("cannot open '%s' to fingerprint it", path.c_str());
  uint64_t h = kFnvOffset;
  std::vector<unsigned char> buf(size_t{4} << 20);
  bool ok = std::fseek(f, 0, SEEK_END) == 0;
  const long end = ok ? std::ftell(f) : -1;
  ok = ok && end >= 0;
  const uint64_t size = ok ? static_cast<uint64_t>(end) : 0;
  auto read_at = [&](uint64_t off, size_t n) {
    if (!ok || std::fseek(f, static_cast<long>(off), SEEK_SET) != 0) {
      ok = false;
      return;
    }
    const size_t got = std::fread(buf.data(), 1, n, f);
    ok = got == n;
    h = fnv1a(h, buf.data(), got);
  };
  const uint64_t head = std::min<uint64_t>(size, buf.size());
  read_at(0, static_cast<size_t>(head));
  constexpr uint64_t kSample = 64 << 10;
  constexpr int kSamples = 16;
  if (size > head + kSample) {
    for (int i = 0; i < kSamples && ok; ++i) {
      const uint64_t off = head + (size - head - kSample) * static_cast<uint64_t>(i) / (kSamples - 1);
      read_at(off, kSample);
    }
  }
  std::fclose(f);
  if (!ok) return make_error("reading '%s' to fingerprint it failed", path.c_str());
  const unsigned char* sz = reinterpret_cast<const unsigned char*>(&size);
  return fnv1a(h, sz, sizeof(size));
}

std::string compare_identities(const std::vector<RankIdentity>& ids) {
  const RankIdentity& ref = ids[0];
  char msg[1024];
  for (size_t r = 0; r < ids.size(); ++r) {
    if (ids[r].error.empty()) continue;
    std::snprintf(msg, sizeof(msg), "rank %zu (host %s) could not load the model: %s", r, ids[r].host.c_str(),
                  ids[r].error.c_str());
    return msg;
  }
  for (size_t r = 1; r < ids.size(); ++r) {
    const RankIdentity& id = ids[r];
    if (id.build != ref.build) {
      std::snprintf(msg, sizeof(msg), "rank %zu (host %s) runs build '%s' but rank 0 (host %s) runs '%s'", r,
                    id.host.c_str(), id.build.c_str(), ref.host.c_str(), ref.build.c_str());
      return msg;
    }
    if (id.file_bytes != ref.file_bytes || id.fingerprint != ref.fingerprint) {
      std::snprintf(
          msg, sizeof(msg),
          "rank %zu (host %s) has a different model file: %" PRIu64 " bytes, fingerprint %016" PRIx64
          "; rank 0 (host %s) has %" PRIu64 " bytes, fingerprint %016" PRIx64 " (every rank must open the same GGUF)",
          r, id.host.c_str(), id.file_bytes, id.fingerprint, ref.host.c_str(), ref.file_bytes, ref.fingerprint);
      return msg;
    }
    if (id.flags != ref.flags) {
      std::snprintf(msg, sizeof(msg), "rank %zu (host %s) runs with '%s' but rank 0 (host %s) with '%s'", r,
                    id.host.c_str(), id.flags.c_str(), ref.host.c_str(), ref.flags.c_str());
      return msg;
    }
  }
  return "";
}

}  // namespace sniper
