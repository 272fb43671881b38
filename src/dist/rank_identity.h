// SPDX-License-Identifier: MIT
// Internal to src/dist: the comparison behind Cluster::check_start, and the wire form of a
// RankIdentity (fixed-size fields, so one gather collects them all).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "dist/cluster.h"

namespace sniper {

// "" when every identity equals ids[0]'s (file, flags, build); else the first difference,
// naming the rank and its host.
std::string compare_identities(const std::vector<RankIdentity>& ids);

struct WireIdentity {
  char host[128];
  char flags[256];
  char build[128];
  char error[256];
  uint64_t file_bytes;
  uint64_t fingerprint;
};

inline WireIdentity to_wire(const RankIdentity& id) {
  WireIdentity w{};
  std::strncpy(w.host, id.host.c_str(), sizeof(w.host) - 1);
  std::strncpy(w.flags, id.flags.c_str(), sizeof(w.flags) - 1);
  std::strncpy(w.build, id.build.c_str(), sizeof(w.build) - 1);
  std::strncpy(w.error, id.error.c_str(), sizeof(w.error) - 1);
  w.file_bytes = id.file_bytes;
  w.fingerprint = id.fingerprint;
  return w;
}

inline RankIdentity from_wire(const WireIdentity& w) {
  RankIdentity id;
  id.host.assign(w.host, strnlen(w.host, sizeof(w.host)));
  id.flags.assign(w.flags, strnlen(w.flags, sizeof(w.flags)));
  id.build.assign(w.build, strnlen(w.build, sizeof(w.build)));
  id.error.assign(w.error, strnlen(w.error, sizeof(w.error)));
  id.file_bytes = w.file_bytes;
  id.fingerprint = w.fingerprint;
  return id;
}

}  // namespace sniper
