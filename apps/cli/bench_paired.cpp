// SPDX-License-Identifier: MIT
#include "bench_paired.h"

#include <algorithm>
#include <cstdio>

#include "common.h"
#include "engine/bandwidth_probe.h"

namespace sniper::cli {

namespace {

// The median (mean of the middle two for an even count).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Result<PairedRoofline> measure_paired_roofline(Session& session, double weight_bytes_per_token,
                                               const std::vector<int32_t>& tokens, uint64_t probe_bytes,
                                               int probe_reps) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 1) return make_error("paired roofline: no tokens to decode");
  if (session.n_ctx() - session.n_past() < n) {
    return make_error("paired roofline: %ld tokens do not fit in the context (%ld of %ld positions used)",
                      static_cast<long>(n), static_cast<long>(session.n_past()), static_cast<long>(session.n_ctx()));
  }
  MemoryReadProbe probe(session.pool(), probe_bytes);
  if (!probe.ok()) {
    return make_error("paired roofline: cannot allocate the %llu MiB probe buffer",
                      static_cast<unsigned long long>(probe_bytes >> 20));
  }
  std::vector<double> probed, streamed, shares;
  for (int64_t i = 0; i < n; ++i) {
    const double gbps = probe.measure(probe_reps).gb_per_s;
    const int32_t one[1] = {tokens[static_cast<size_t>(i)]};
    const double t0 = now_s();
    SNIPER_TRY(session.eval(one));
    const double weight_gbps = weight_bytes_per_token / (now_s() - t0) / 1e9;
    probed.push_back(gbps);
    streamed.push_back(weight_gbps);
    shares.push_back(gbps > 0 ? weight_gbps / gbps : 0);
    std::fprintf(stderr, "\rroofline pairs %ld/%ld   ", static_cast<long>(i + 1), static_cast<long>(n));
  }
  std::fprintf(stderr, "\n");
  PairedRoofline r;
  r.n_pairs = n;
  r.roofline_gbps = median(probed);
  r.weight_gbps = median(streamed);
  r.share = median(shares);
  r.share_low = *std::min_element(shares.begin(), shares.end());
  r.share_high = *std::max_element(shares.begin(), shares.end());
  return r;
}

}  // namespace sniper::cli
