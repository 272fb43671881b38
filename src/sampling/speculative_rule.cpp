// SPDX-License-Identifier: MIT
#include "sampling/speculative_rule.h"

#include <algorithm>

#include "base/check.h"

namespace sniper {

SpecDecision speculative_accept(const float* p, const float* q, int32_t n_vocab, int32_t draft, Sampler& sampler,
                                std::vector<float>& residual) {
  CHECK(p != nullptr && n_vocab > 0 && draft >= 0 && draft < n_vocab, "speculative_accept: draft %d outside [0, %d)",
        draft, n_vocab);
  const double q_draft = q != nullptr ? static_cast<double>(q[draft]) : 1.0;
  CHECK(q_draft > 0, "speculative_accept: the draft token %d has probability 0 under its own distribution", draft);
  const double p_draft = p[draft];
  // u < p/q keeps the draft with probability min(1, p/q) (u is in [0, 1)).
  if (sampler.uniform() * q_draft < p_draft) return {draft, true};
  const auto n = static_cast<size_t>(n_vocab);
  residual.resize(n);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    const float qi = q != nullptr ? q[i] : (static_cast<int32_t>(i) == draft ? 1.0f : 0.0f);
    residual[i] = std::max(0.0f, p[i] - qi);
    any = any || residual[i] > 0;
  }
  // p <= q everywhere only when p == q (both sum to 1), where a rejection has probability 0;
  // float rounding can still get here: p itself is then the right distribution.
  if (!any) return {sampler.sample_from(p, n_vocab), false};
  const int32_t token = sampler.sample_from(residual.data(), n_vocab);
  return {token, token == draft};
}

}  // namespace sniper
