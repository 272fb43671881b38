// SPDX-License-Identifier: MIT
#include "weights/expert_cache.h"

#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "base/huge_pages.h"
#include "base/log.h"

namespace sniper {

namespace {

constexpr uint64_t kMaxRegisteredBuffer = uint64_t{1} << 30;  // io_uring's per-buffer limit
constexpr float kFrequencyDecay = 0.95f;                      // per token, LFRU

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<CachePolicy> parse_cache_policy(std::string_view text) {
  if (text == "lru") return CachePolicy::kLru;
  if (text == "lfru") return CachePolicy::kLfru;
  return make_error("--cache-policy is '%.*s' but must be one of: lru, lfru", static_cast<int>(text.size()),
                    text.data());
}

const char* cache_policy_name(CachePolicy policy) { return policy == CachePolicy::kLru ? "lru" : "lfru"; }

LayerCacheStats ExpertCacheStats::total() const {
  LayerCacheStats t;
  for (const LayerCacheStats& l : layers) {
    t.requests += l.requests;
    t.opened += l.opened;
    t.opened_deferred += l.opened_deferred;
    t.hits += l.hits;
    t.bytes_read += l.bytes_read;
    t.stall_seconds += l.stall_seconds;
    t.demand_stall_seconds += l.demand_stall_seconds;
    t.prefetch_issued += l.prefetch_issued;
    t.prefetch_useful += l.prefetch_useful;
    t.predicted += l.predicted;
    t.predicted_correct += l.predicted_correct;
    t.actual_in_prediction_base += l.actual_in_prediction_base;
  }
  return t;
}

bool ExpertLocation::contiguous() const {
  for (int p = 1; p < 3; ++p) {
    const uint64_t prev_end = part[p - 1].file_offset + part[p - 1].nbytes;
    if (part[p].file_offset < prev_end || part[p].file_offset - prev_end >= 4096) return false;
  }
  return true;
}

Result<std::vector<std::vector<ExpertLocation>>> locate_experts(const GgufFile& file, int64_t n_layers,
                                                                int64_t n_experts,
                                                                std::unordered_set<std::string>* sources) {
  std::vector<std::vector<ExpertLocation>> out(static_cast<size_t>(n_layers),
                                               std::vector<ExpertLocation>(static_cast<size_t>(n_experts)));
  static const char* kMerged[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
  static const char* kSplit[3] = {"ffn_gate", "ffn_up", "ffn_down"};
  for (int64_t l = 0; l < n_layers; ++l) {
    const std::string fused = "blk." + std::to_string(l) + ".ffn_gate_up_exps.weight";
    const GgufTensorInfo* gu = file.find_tensor(fused);
    if (gu != nullptr) {
      if (gu->ne[2] != n_experts || gu->ne[1] % 2 != 0) {
        return make_error("tensor '%s' has shape [%ld, %ld, %ld] but must hold %ld experts of two equal halves",
                          fused.c_str(), static_cast<long>(gu->ne[0]), static_cast<long>(gu->ne[1]),
                          static_cast<long>(gu->ne[2]), static_cast<long>(n_experts));
      }
      if (sources != nullptr) sources->insert(fused);
      const uint64_t slice = gu->nbytes / static_cast<uint64_t>(n_experts), half = slice / 2;
      for (int64_t e = 0; e < n_experts; ++e) {
        ExpertLocation& x = out[static_cast<size_t>(l)][static_cast<size_t>(e)];
        const uint64_t at = gu->file_offset + slice * static_cast<uint64_t>(e);
        x.part[0] = {at, half, gu->type, gu->ne[0], gu->ne[1] / 2};
        x.part[1] = {at + half, half, gu->type, gu->ne[0], gu->ne[1] / 2};
      }
    }
    for (int p = gu != nullptr ? 2 : 0; p < 3; ++p) {
      const std::string merged = "blk." + std::to_string(l) + "." + kMerged[p] + ".weight";
      if (const GgufTensorInfo* t = file.find_tensor(merged)) {
        if (t->ne[2] != n_experts) {
          return make_error("tensor '%s' holds %ld experts but the model has %ld", merged.c_str(),
                            static_cast<long>(t->ne[2]), static_cast<long>(n_experts));
        }
        if (sources != nullptr) sources->insert(merged);
        const uint64_t slice = t->nbytes / static_cast<uint64_t>(n_experts);
        for (int64_t e = 0; e < n_experts; ++e) {
          out[static_cast<size_t>(l)][static_cast<size_t>(e)].part[p] = {
              t->file_offset + slice * static_cast<uint64_t>(e), slice, t->type, t->ne[0], t->ne[1]};
        }
        continue;
      }
      for (int64_t e = 0; e < n_experts; ++e) {
        const std::string name = "blk." + std::to_string(l) + "." + kSplit[p] + "." + std::to_string(e) + ".weight";
        const GgufTensorInfo* t = file.find_tensor(name);
        if (t == nullptr) return make_error("neither '%s' nor '%s' is in the file", merged.c_str(), name.c_str());
        if (sources != nullptr) sources->insert(name);
        out[static_cast<size_t>(l)][static_cast<size_t>(e)].part[p] = {t->file_offset, t->nbytes, t->type, t->ne[0],
                                                                       t->ne[1]};
      }
    }
  }
  return out;
}

Result<std::unique_ptr<ExpertCache>> ExpertCache::create(std::vector<std::vector<ExpertLocation>> experts, IoEngine* io,
                                                         const ExpertCacheOptions& options) {
  if (options.n_slots < 1)
    return make_error("expert cache needs at least 1 slot, got %ld", static_cast<long>(options.n_slots));
  if (experts.empty() || experts[0].empty()) return make_error("expert cache: the model has no experts");
  std::unique_ptr<ExpertCache> c(new ExpertCache());
  c->experts_ = std::move(experts);
  c->n_experts_ = static_cast<int64_t>(c->experts_[0].size());
  c->io_ = io;
  c->options_ = options;
  c->slot_bytes_ = options.gate_region_bytes + options.up_region_bytes + options.down_region_bytes;
  CHECK(c->slot_bytes_ % 4096 == 0, "slot size %llu is not page aligned",
        static_cast<unsigned long long>(c->slot_bytes_));
  const uint64_t regions[3] = {options.gate_region_bytes, options.up_region_bytes, options.down_region_bytes};
  for (size_t l = 0; l < c->experts_.size(); ++l) {
    for (const ExpertLocation& x : c->experts_[l]) {
      if (x.contiguous()) {
        const uint64_t span =
            io->span_for(x.part[0].file_offset, x.part[2].file_offset + x.part[2].nbytes - x.part[0].file_offset)
                .aligned_length;
        if (span > c->slot_bytes_)
          return make_error("layer %zu: a packed expert of %llu bytes does not fit a %llu-byte slot", l,
                            static_cast<unsigned long long>(span), static_cast<unsigned long long>(c->slot_bytes_));
        continue;
      }
      if (x.gate_up_adjacent()) {
        const uint64_t span = io->span_for(x.part[0].file_offset, x.part[0].nbytes + x.part[1].nbytes).aligned_length;
        if (span > regions[0] + regions[1]) {
          return make_error("layer %zu: a fused gate_up expert of %llu bytes does not fit the %llu-byte slot regions",
                            l, static_cast<unsigned long long>(span),
                            static_cast<unsigned long long>(regions[0] + regions[1]));
        }
      }
      for (int p = x.gate_up_adjacent() ? 2 : 0; p < 3; ++p) {
        if (io->span_for(x.part[p].file_offset, x.part[p].nbytes).aligned_length > regions[p]) {
          return make_error("layer %zu: an expert slice of %llu bytes does not fit the %llu-byte slot region", l,
                            static_cast<unsigned long long>(x.part[p].nbytes),
                            static_cast<unsigned long long>(regions[p]));
        }
      }
    }
  }
  c->arena_bytes_ = c->slot_bytes_ * static_cast<uint64_t>(options.n_slots);
  c->arena_ = map_pages(c->arena_bytes_);
  if (c->arena_ == nullptr) {
    return make_error("cannot allocate %llu bytes for %ld expert slots",
                      static_cast<unsigned long long>(c->arena_bytes_), static_cast<long>(options.n_slots));
  }
  // Register the arena in pieces of whole slots, each under io_uring's 1 GiB buffer limit.
  std::vector<iovec> iov;
  const uint64_t slots_per_buffer = std::max<uint64_t>(1, kMaxRegisteredBuffer / c->slot_bytes_);
  for (uint64_t s = 0; s < static_cast<uint64_t>(options.n_slots); s += slots_per_buffer) {
    const uint64_t n = std::min<uint64_t>(slots_per_buffer, static_cast<uint64_t>(options.n_slots) - s);
    iov.push_back({c->arena_ + s * c->slot_bytes_, static_cast<size_t>(n * c->slot_bytes_)});
  }
  Status reg = io->register_buffers(iov);
  if (!reg.ok()) LOG_INFO("expert cache: buffers not registered (%s); using plain reads", reg.error().message.c_str());
  c->slots_.resize(static_cast<size_t>(options.n_slots));
  const size_t n_keys = c->experts_.size() * static_cast<size_t>(c->n_experts_);
  c->slot_index_.assign(n_keys, -1);
  c->freq_.assign(n_keys, 0.0f);
  c->touched_.assign(n_keys, 0);
  c->request_counts_.assign(n_keys, 0);
  c->predicted_.assign(n_keys, 0);
  c->has_prediction_.assign(c->experts_.size(), 0);
  c->stats_.layers.resize(c->experts_.size());
  return c;
}

ExpertCache::~ExpertCache() {
  // Reads may still be landing in the arena: drain them before freeing it.
  if (io_ != nullptr && io_->n_outstanding() > 0) (void)io_->wait_all();
  unmap_pages(arena_, arena_bytes_);
}

float ExpertCache::score(const Slot& s) const {
  if (options_.policy == CachePolicy::kLru) return static_cast<float>(s.last_use);
  return freq_[static_cast<size_t>(s.layer * n_experts_ + s.expert)];
}

int32_t ExpertCache::find_victim() {
  int32_t best = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    if (s.state == SlotState::kEmpty) return static_cast<int32_t>(i);
    if (s.pinned) continue;
    if (s.state == SlotState::kLoading) {
      // A prefetch nobody asked for yet: usable once its read has landed.
      if (!read_landed(static_cast<int32_t>(i))) continue;
      if (!finish_read(static_cast<int32_t>(i)).ok()) return static_cast<int32_t>(i);  // slot is empty now
    }
    if (best < 0) {
      best = static_cast<int32_t>(i);
      continue;
    }
    const Slot& b = slots_[static_cast<size_t>(best)];
    const float sa = score(s), sb = score(b);
    if (sa < sb || (sa == sb && s.last_use < b.last_use)) best = static_cast<int32_t>(i);
  }
  return best;
}

Status ExpertCache::start_read(int32_t slot_idx, int64_t layer, int64_t expert, bool on_demand) {
  Slot& s = slots_[static_cast<size_t>(slot_idx)];
  if (s.layer >= 0) {
    slot_of(s.layer, s.expert) = -1;
    ++stats_.evictions;
  }
  s.layer = static_cast<int32_t>(layer);
  s.expert = static_cast<int32_t>(expert);
  s.state = SlotState::kLoading;
  s.from_prefetch = false;
  s.on_demand = on_demand;
  slot_of(layer, expert) = slot_idx;
  const ExpertLocation& x = experts_[static_cast<size_t>(layer)][static_cast<size_t>(expert)];
  uint8_t* base = arena_ + slot_bytes_ * static_cast<uint64_t>(slot_idx);
  ReadRequest reqs[3];
  size_t n_reqs = 0;
  if (x.contiguous()) {
    const uint64_t len = x.part[2].file_offset + x.part[2].nbytes - x.part[0].file_offset;
    reqs[n_reqs++] = {x.part[0].file_offset, len, base};
  } else {
    uint8_t* dst[3] = {base, base + options_.gate_region_bytes,
                       base + options_.gate_region_bytes + options_.up_region_bytes};
    const bool fused = x.gate_up_adjacent();
    if (fused) reqs[n_reqs++] = {x.part[0].file_offset, x.part[0].nbytes + x.part[1].nbytes, base};
    for (int p = fused ? 2 : 0; p < 3; ++p) reqs[n_reqs++] = {x.part[p].file_offset, x.part[p].nbytes, dst[p]};
  }
  for (size_t i = 0; i < n_reqs; ++i) {
    stats_.layers[static_cast<size_t>(layer)].bytes_read +=
        io_->span_for(reqs[i].offset, reqs[i].length).aligned_length;
  }
  for (ReadTicket& t : s.tickets) t = 0;
  Status st = io_->submit_batch(std::span<const ReadRequest>(reqs, n_reqs), std::span<ReadTicket>(s.tickets, n_reqs));
  if (!st.ok()) {
    slot_of(layer, expert) = -1;
    s = Slot{};
    return make_error("expert %ld of layer %ld: %s", static_cast<long>(expert), static_cast<long>(layer),
                      st.error().message.c_str());
  }
  return ok_status();
}

Status ExpertCache::finish_read(int32_t slot_idx) {
  Slot& s = slots_[static_cast<size_t>(slot_idx)];
  Status first;
  for (ReadTicket& t : s.tickets) {
    if (t == 0) continue;
    Status st = io_->wait(t);
    t = 0;
    if (!st.ok() && first.ok()) first = st;
  }
  if (!first.ok()) {
    const int32_t layer = s.layer, expert = s.expert;
    slot_of(layer, expert) = -1;
    s = Slot{};
    Status changed = io_->file().check_unchanged();
    return make_error("reading expert %d of layer %d failed: %s%s%s", expert, layer, first.error().message.c_str(),
                      changed.ok() ? "" : "; ", changed.ok() ? "" : changed.error().message.c_str());
  }
  s.state = SlotState::kReady;
  return ok_status();
}

ExpertView ExpertCache::view_of(int32_t slot_idx) const {
  const Slot& s = slots_[static_cast<size_t>(slot_idx)];
  const ExpertLocation& x = experts_[static_cast<size_t>(s.layer)][static_cast<size_t>(s.expert)];
  const uint8_t* base = arena_ + slot_bytes_ * static_cast<uint64_t>(slot_idx);
  QTensor out[3];
  const bool merged = x.contiguous();
  const uint64_t merged_lead =
      merged
          ? io_->span_for(x.part[0].file_offset, x.part[2].file_offset + x.part[2].nbytes - x.part[0].file_offset).lead
          : 0;
  const uint64_t region_off[3] = {0, options_.gate_region_bytes, options_.gate_region_bytes + options_.up_region_bytes};
  for (int p = 0; p < 3; ++p) {
    const ExpertSlice& sl = x.part[p];
    out[p].type = sl.type;
    out[p].ne = {sl.ne0, sl.ne1, 1, 1};
    out[p].row_bytes = row_bytes(sl.type, sl.ne0);
    const bool in_gate_read = !merged && p == 1 && x.gate_up_adjacent();  // read with gate, right after it
    out[p].data = merged         ? base + merged_lead + (sl.file_offset - x.part[0].file_offset)
                  : in_gate_read ? out[0].data + x.part[0].nbytes
                                 : base + region_off[p] + io_->span_for(sl.file_offset, sl.nbytes).lead;
  }
  return {out[0], out[1], out[2]};
}

Status ExpertCache::begin_layer(int64_t layer_idx, std::span<const int32_t> experts) {
  CHECK(layer_ < 0, "begin_layer(%ld) while layer %ld is open", static_cast<long>(layer_idx),
        static_cast<long>(layer_));
  CHECK(layer_idx >= 0 && layer_idx < static_cast<int64_t>(experts_.size()));
  layer_ = layer_idx;
  ready_.clear();
  loading_.clear();
  deferred_.clear();
  pinned_.clear();
  LayerCacheStats& ls = stats_.layers[static_cast<size_t>(layer_idx)];
  const bool had_prediction = has_prediction_[static_cast<size_t>(layer_idx)] != 0;
  const uint64_t now = ++clock_;
  std::vector<int32_t> misses;
  for (int32_t e : experts) {
    const size_t key = static_cast<size_t>(layer_idx * n_experts_ + e);
    ++ls.requests;
    if (!touched_[key]) {
      touched_[key] = 1;
      ++stats_.distinct_experts_touched;
    }
    freq_[key] += 1.0f;
    ++request_counts_[key];
    if (had_prediction) {
      ++ls.actual_in_prediction_base;
      if (predicted_[key]) ++ls.predicted_correct;
    }
    const int32_t s = slot_of(layer_idx, e);
    if (s < 0) {
      misses.push_back(e);
      continue;
    }
    ++ls.hits;
    Slot& slot = slots_[static_cast<size_t>(s)];
    if (slot.from_prefetch) {
      ++ls.prefetch_useful;
      slot.from_prefetch = false;
    }
    slot.pinned = true;
    slot.last_use = now;
    pinned_.push_back(s);
    (slot.state == SlotState::kReady ? ready_ : loading_).push_back(s);
  }
  if (had_prediction) {
    for (int64_t e = 0; e < n_experts_; ++e) predicted_[static_cast<size_t>(layer_idx * n_experts_ + e)] = 0;
    has_prediction_[static_cast<size_t>(layer_idx)] = 0;
  }
  for (int32_t e : misses) {
    const int32_t v = find_victim();
    if (v < 0) {
      deferred_.push_back(e);
      continue;
    }
    SNIPER_TRY(start_read(v, layer_idx, e, /*on_demand=*/true));
    Slot& slot = slots_[static_cast<size_t>(v)];
    slot.pinned = true;
    slot.last_use = now;
    pinned_.push_back(v);
    loading_.push_back(v);
  }
  layer_stable_ = deferred_.empty();
  ++ls.opened;
  if (!layer_stable_) ++ls.opened_deferred;
  return ok_status();
}

Status ExpertCache::wait_for_read(int32_t slot) {
  const bool on_demand = slots_[static_cast<size_t>(slot)].on_demand;  // finish_read may clear the slot
  const auto t0 = std::chrono::steady_clock::now();
  Status st = finish_read(slot);
  const double waited = seconds_since(t0);
  LayerCacheStats& ls = stats_.layers[static_cast<size_t>(layer_)];
  ls.stall_seconds += waited;
  if (on_demand) ls.demand_stall_seconds += waited;
  return st;
}

bool ExpertCache::read_landed(int32_t slot) {
  for (ReadTicket t : slots_[static_cast<size_t>(slot)].tickets) {
    if (t != 0 && !io_->is_done(t)) return false;
  }
  return true;
}

bool ExpertCache::next_is_ready() {
  CHECK(layer_ >= 0, "next_is_ready() outside begin_layer/end_layer");
  if (!ready_.empty()) return true;
  for (int32_t slot : loading_) {
    if (read_landed(slot)) return true;
  }
  return loading_.empty() && deferred_.empty();
}

Result<ReadyExpert> ExpertCache::next_ready() {
  CHECK(layer_ >= 0, "next_ready() outside begin_layer/end_layer");
  if (handed_out_ >= 0) {
    // Computed: evictable by the layer's deferred experts. A layer without them keeps every
    // slot it was handed pinned (views_stable()).
    if (!layer_stable_) slots_[static_cast<size_t>(handed_out_)].pinned = false;
    handed_out_ = -1;
  }
  ReadyExpert r;
  int32_t slot = -1;
  if (!ready_.empty()) {
    slot = ready_.back();
    ready_.pop_back();
  } else if (!loading_.empty()) {
    size_t pick = 0;  // the first whose read has landed, else the oldest
    for (size_t i = 0; i < loading_.size(); ++i) {
      if (read_landed(loading_[i])) {
        pick = i;
        break;
      }
    }
    slot = loading_[pick];
    loading_.erase(loading_.begin() + static_cast<long>(pick));
    SNIPER_TRY(wait_for_read(slot));
  } else if (!deferred_.empty()) {
    const int32_t e = deferred_.back();
    deferred_.pop_back();
    slot = find_victim();
    if (slot < 0) {
      // Every unpinned slot is still receiving a prefetch: wait for one and take it over.
      for (size_t i = 0; i < slots_.size() && slot < 0; ++i) {
        if (!slots_[i].pinned && slots_[i].state == SlotState::kLoading) {
          (void)finish_read(static_cast<int32_t>(i));  // a failed prefetch just frees the slot
          slot = static_cast<int32_t>(i);
        }
      }
    }
    CHECK(slot >= 0, "expert cache: every one of the %ld slots is pinned", static_cast<long>(options_.n_slots));
    SNIPER_TRY(start_read(slot, layer_, e, /*on_demand=*/true));
    slots_[static_cast<size_t>(slot)].last_use = clock_;
    SNIPER_TRY(wait_for_read(slot));
  } else {
    return r;
  }
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.pinned = true;
  handed_out_ = slot;
  r.expert = s.expert;
  r.view = view_of(slot);
  return r;
}

void ExpertCache::end_layer() {
  for (int32_t s : pinned_) slots_[static_cast<size_t>(s)].pinned = false;
  if (handed_out_ >= 0) slots_[static_cast<size_t>(handed_out_)].pinned = false;
  handed_out_ = -1;
  // Reads of experts that were announced but not consumed (an error cut the layer short) stay
  // in flight and complete later; their slots are simply unpinned.
  pinned_.clear();
  ready_.clear();
  loading_.clear();
  deferred_.clear();
  layer_ = -1;
  layer_stable_ = false;
}

void ExpertCache::prefetch(int64_t layer_idx, std::span<const int32_t> experts) {
  if (!options_.prefetch || layer_idx < 0 || layer_idx >= static_cast<int64_t>(experts_.size())) return;
  // The open layer still waits for slots for some of its own experts: a hint takes none.
  if (layer_ >= 0 && !deferred_.empty()) return;
  LayerCacheStats& ls = stats_.layers[static_cast<size_t>(layer_idx)];
  has_prediction_[static_cast<size_t>(layer_idx)] = 1;
  // The hint's experts are pinned while it runs, so that none of its own reads evicts another
  // (a just-landed prefetch scores lowest under LFRU: it has no requests yet).
  hint_pinned_.clear();
  auto hold = [&](int32_t slot) {
    Slot& s = slots_[static_cast<size_t>(slot)];
    if (s.pinned) return;
    s.pinned = true;
    hint_pinned_.push_back(slot);
  };
  for (int32_t e : experts) {
    uint8_t& was_predicted = predicted_[static_cast<size_t>(layer_idx * n_experts_ + e)];
    if (!was_predicted) ++ls.predicted;  // a key hinted twice (early, then refined) counts once
    was_predicted = 1;
    if (const int32_t held = slot_of(layer_idx, e); held >= 0) {
      hold(held);
      continue;
    }
    const int32_t v = find_victim();
    if (v < 0) break;
    if (!start_read(v, layer_idx, e, /*on_demand=*/false).ok()) break;  // the real request will report the error
    Slot& s = slots_[static_cast<size_t>(v)];
    s.from_prefetch = true;
    s.last_use = clock_;
    ++ls.prefetch_issued;
    hold(v);
  }
  for (int32_t slot : hint_pinned_) slots_[static_cast<size_t>(slot)].pinned = false;
  hint_pinned_.clear();
}

void ExpertCache::end_token() {
  if (options_.policy == CachePolicy::kLfru) {
    for (float& f : freq_) f *= kFrequencyDecay;
  }
}

void ExpertCache::reset_stats() {
  const size_t n = stats_.layers.size();
  stats_ = ExpertCacheStats{};
  stats_.layers.resize(n);
  std::fill(request_counts_.begin(), request_counts_.end(), 0);
}

uint64_t ExpertCache::expert_bytes(int64_t layer_idx) const {
  return experts_[static_cast<size_t>(layer_idx)][0].bytes();
}

std::vector<int64_t> ExpertCache::distinct_per_layer() const {
  std::vector<int64_t> out(experts_.size(), 0);
  for (size_t l = 0; l < experts_.size(); ++l) {
    for (int64_t e = 0; e < n_experts_; ++e)
      out[l] += touched_[l * static_cast<size_t>(n_experts_) + static_cast<size_t>(e)];
  }
  return out;
}

}  // namespace sniper
