// SPDX-License-Identifier: MIT
#include "kv/state_checkpoints.h"

#include <utility>

#include "base/check.h"

namespace sniper {

StateCheckpoints::StateCheckpoints(int64_t max_count, size_t state_bytes)
    : max_count_(max_count), state_bytes_(state_bytes) {
  CHECK(max_count >= 1, "StateCheckpoints needs max_count >= 1, got %ld", static_cast<long>(max_count));
}

void StateCheckpoints::save(const SequenceState& state, int64_t n) {
  CHECK(n >= 1 && n <= state.n_ctx(), "checkpoint at %ld tokens outside [1, %ld]", static_cast<long>(n),
        static_cast<long>(state.n_ctx()));
  CHECK(latest() <= n, "checkpoint at %ld tokens before the latest one at %ld (drop_after first)", static_cast<long>(n),
        static_cast<long>(latest()));
  CHECK(state.checkpoint_bytes(n) <= state_bytes_, "checkpoint of %zu bytes exceeds the %zu planned",
        state.checkpoint_bytes(n), state_bytes_);
  Checkpoint cp;
  if (!kept_.empty() && kept_.back().pos == n) {
    cp = std::move(kept_.back());
    kept_.pop_back();
  } else if (count() == max_count_) {
    cp = std::move(kept_.front());
    kept_.erase(kept_.begin());
  } else if (!spare_.empty()) {
    cp = std::move(spare_.back());
    spare_.pop_back();
  } else {
    cp.data.resize(state_bytes_);
    allocated_bytes_ += state_bytes_;
  }
  cp.pos = n;
  state.save_checkpoint(n, cp.data.data());
  kept_.push_back(std::move(cp));
}

int64_t StateCheckpoints::latest_at_or_before(int64_t n) const {
  for (size_t i = kept_.size(); i-- > 0;) {
    if (kept_[i].pos <= n) return kept_[i].pos;
  }
  return 0;
}

int64_t StateCheckpoints::restore(SequenceState& state, int64_t n) {
  drop_after(n);
  if (kept_.empty()) return 0;
  const Checkpoint& cp = kept_.back();
  state.load_checkpoint(cp.pos, cp.data.data());
  return cp.pos;
}

void StateCheckpoints::drop_after(int64_t n) {
  while (!kept_.empty() && kept_.back().pos > n) {
    spare_.push_back(std::move(kept_.back()));
    kept_.pop_back();
  }
}

}  // namespace sniper
