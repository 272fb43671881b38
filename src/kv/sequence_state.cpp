// SPDX-License-Identifier: MIT
#include "kv/sequence_state.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace sniper {

namespace {

// Rows a kKv layer's cache holds.
int64_t capacity_of(const LayerStateSpec& s, int64_t n_ctx) { return s.window > 0 ? std::min(s.window, n_ctx) : n_ctx; }

struct GroupKey {
  int64_t n_kv_heads, head_dim, capacity;
  bool ring;
  bool operator==(const GroupKey&) const = default;
};

GroupKey key_of(const LayerStateSpec& s, int64_t n_ctx) {
  return {s.n_kv_heads, s.head_dim, capacity_of(s, n_ctx), s.window > 0 && s.window < n_ctx};
}

Status validate_specs(std::span<const LayerStateSpec> specs, int64_t n_ctx, const KvConfig& config) {
  if (n_ctx < 1) return make_error("context size is %ld but must be at least 1", static_cast<long>(n_ctx));
  SNIPER_TRY(validate_kv_config(config));
  if (specs.empty()) return make_error("a sequence state needs at least one layer");
  for (size_t l = 0; l < specs.size(); ++l) {
    const LayerStateSpec& s = specs[l];
    switch (s.kind) {
      case LayerStateKind::kNone: break;
      case LayerStateKind::kKv:
        if (s.n_kv_heads < 1 || s.head_dim < 1 || s.window < 0) {
          return make_error(
              "layer %zu: KV state needs n_kv_heads >= 1, head_dim >= 1 and window >= 0 (got %ld, %ld, %ld)", l,
              static_cast<long>(s.n_kv_heads), static_cast<long>(s.head_dim), static_cast<long>(s.window));
        }
        if (Status st = validate_kv_head_dim(config, s.head_dim); !st.ok()) {
          return make_error("layer %zu: %s", l, st.error().message.c_str());
        }
        break;
      case LayerStateKind::kSharedKv: {
        if (s.shared_with < 0 || static_cast<size_t>(s.shared_with) >= l ||
            specs[static_cast<size_t>(s.shared_with)].kind != LayerStateKind::kKv) {
          return make_error(
              "layer %zu shares the KV cache of layer %ld, which must be an earlier layer with its own cache", l,
              static_cast<long>(s.shared_with));
        }
        break;
      }
      case LayerStateKind::kRecurrent:
        if (s.conv_floats < 0 || s.recurrent_floats < 1) {
          return make_error(
              "layer %zu: recurrent state needs conv_floats >= 0 and recurrent_floats >= 1 (got %ld, %ld)", l,
              static_cast<long>(s.conv_floats), static_cast<long>(s.recurrent_floats));
        }
        break;
    }
  }
  return ok_status();
}

// The groups of kKv layers with the same shape, in order of first appearance:
// group_of[l] for kKv layers (and -1 otherwise), each group's layer count in sizes.
void make_groups(std::span<const LayerStateSpec> specs, int64_t n_ctx, std::vector<GroupKey>* keys,
                 std::vector<int64_t>* sizes, std::vector<int64_t>* group_of, std::vector<int64_t>* index_in) {
  group_of->assign(specs.size(), -1);
  index_in->assign(specs.size(), 0);
  for (size_t l = 0; l < specs.size(); ++l) {
    if (specs[l].kind != LayerStateKind::kKv) continue;
    const GroupKey k = key_of(specs[l], n_ctx);
    size_t g = 0;
    while (g < keys->size() && !((*keys)[g] == k)) ++g;
    if (g == keys->size()) {
      keys->push_back(k);
      sizes->push_back(0);
    }
    (*group_of)[l] = static_cast<int64_t>(g);
    (*index_in)[l] = (*sizes)[g]++;
  }
}

}  // namespace

Status SequenceState::validate(std::span<const LayerStateSpec> specs, int64_t n_ctx, const KvConfig& config) {
  return validate_specs(specs, n_ctx, config);
}

size_t SequenceState::bytes_for(std::span<const LayerStateSpec> specs, int64_t n_ctx, const KvConfig& config) {
  std::vector<GroupKey> keys;
  std::vector<int64_t> sizes, group_of, index_in;
  make_groups(specs, n_ctx, &keys, &sizes, &group_of, &index_in);
  size_t total = 0;
  for (size_t g = 0; g < keys.size(); ++g) {
    total += KvCache::bytes_for(sizes[g], keys[g].capacity, keys[g].n_kv_heads, keys[g].head_dim, config);
  }
  for (const LayerStateSpec& s : specs) {
    if (s.kind == LayerStateKind::kRecurrent)
      total += sizeof(float) * static_cast<size_t>(s.conv_floats + s.recurrent_floats);
  }
  return total;
}

Result<std::unique_ptr<SequenceState>> SequenceState::create(std::span<const LayerStateSpec> specs, int64_t n_ctx,
                                                             const KvConfig& config) {
  SNIPER_TRY(validate_specs(specs, n_ctx, config));
  std::unique_ptr<SequenceState> st(new SequenceState());
  st->specs_.assign(specs.begin(), specs.end());
  st->n_ctx_ = n_ctx;
  st->config_ = config;
  std::vector<GroupKey> keys;
  std::vector<int64_t> sizes, group_of, index_in;
  make_groups(specs, n_ctx, &keys, &sizes, &group_of, &index_in);
  for (size_t g = 0; g < keys.size(); ++g) {
    auto cache =
        KvCache::create(sizes[g], keys[g].capacity, keys[g].n_kv_heads, keys[g].head_dim, config, keys[g].ring);
    if (!cache.ok()) return cache.error();
    st->groups_.push_back(std::move(cache).value());
  }
  st->layers_.resize(specs.size());
  for (size_t l = 0; l < specs.size(); ++l) {
    Layer& layer = st->layers_[l];
    const LayerStateSpec& s = specs[l];
    if (s.kind == LayerStateKind::kKv) {
      layer.group = group_of[l];
      layer.index = index_in[l];
    } else if (s.kind == LayerStateKind::kSharedKv) {
      layer = st->layers_[static_cast<size_t>(s.shared_with)];
    } else if (s.kind == LayerStateKind::kRecurrent) {
      layer.recurrent_offset = st->recurrent_floats_total_;
      st->recurrent_floats_total_ += static_cast<size_t>(s.conv_floats + s.recurrent_floats);
    }
  }
  st->recurrent_.assign(st->recurrent_floats_total_, 0.0f);
  return st;
}

size_t SequenceState::bytes() const {
  size_t total = recurrent_.size() * sizeof(float);
  for (const auto& g : groups_) total += g->bytes();
  return total;
}

KvSlot SequenceState::kv_slot(int64_t layer_idx) const {
  const Layer& layer = layers_[static_cast<size_t>(layer_idx)];
  CHECK(layer.group >= 0, "layer %ld has no KV cache", static_cast<long>(layer_idx));
  return {groups_[static_cast<size_t>(layer.group)].get(), layer.index};
}

float* SequenceState::conv_state(int64_t layer_idx) {
  CHECK(spec(layer_idx).kind == LayerStateKind::kRecurrent, "layer %ld has no recurrent state",
        static_cast<long>(layer_idx));
  return recurrent_.data() + layers_[static_cast<size_t>(layer_idx)].recurrent_offset;
}

float* SequenceState::recurrent_state(int64_t layer_idx) { return conv_state(layer_idx) + spec(layer_idx).conv_floats; }

void SequenceState::reset_recurrent() { std::fill(recurrent_.begin(), recurrent_.end(), 0.0f); }

bool SequenceState::rewindable(int64_t n_past) const {
  if (has_recurrent()) return false;
  for (const auto& g : groups_) {
    if (g->ring() && n_past > g->n_ctx()) return false;
  }
  return true;
}

bool SequenceState::is_ring_layer(int64_t layer_idx) const {
  return spec(layer_idx).kind == LayerStateKind::kKv && kv_slot(layer_idx).cache->ring();
}

bool SequenceState::needs_checkpoints() const {
  if (has_recurrent()) return true;
  for (const auto& g : groups_) {
    if (g->ring()) return true;
  }
  return false;
}

size_t SequenceState::checkpoint_bytes(int64_t n) const {
  size_t total = recurrent_.size() * sizeof(float);
  for (int64_t l = 0; l < n_layers(); ++l) {
    if (is_ring_layer(l)) total += saved_layer_bytes(l, n);
  }
  return total;
}

size_t SequenceState::checkpoint_bytes_for(std::span<const LayerStateSpec> specs, int64_t n_ctx,
                                           const KvConfig& config) {
  size_t total = 0;
  for (const LayerStateSpec& s : specs) {
    if (s.kind == LayerStateKind::kRecurrent)
      total += sizeof(float) * static_cast<size_t>(s.conv_floats + s.recurrent_floats);
    if (s.kind == LayerStateKind::kKv && key_of(s, n_ctx).ring) {
      total += KvCache::bytes_for(1, capacity_of(s, n_ctx), s.n_kv_heads, s.head_dim, config);
    }
  }
  return total;
}

void SequenceState::save_checkpoint(int64_t n, uint8_t* out) const {
  const size_t recurrent_bytes = recurrent_.size() * sizeof(float);
  if (recurrent_bytes > 0) std::memcpy(out, recurrent_.data(), recurrent_bytes);
  size_t at = recurrent_bytes;
  for (int64_t l = 0; l < n_layers(); ++l) {
    if (!is_ring_layer(l)) continue;
    save_layer(l, n, out + at);
    at += saved_layer_bytes(l, n);
  }
}

void SequenceState::load_checkpoint(int64_t n, const uint8_t* in) {
  const size_t recurrent_bytes = recurrent_.size() * sizeof(float);
  if (recurrent_bytes > 0) std::memcpy(recurrent_.data(), in, recurrent_bytes);
  size_t at = recurrent_bytes;
  for (int64_t l = 0; l < n_layers(); ++l) {
    if (!is_ring_layer(l)) continue;
    load_layer(l, n, in + at);
    at += saved_layer_bytes(l, n);
  }
}

size_t SequenceState::saved_layer_bytes(int64_t layer_idx, int64_t n) const {
  const LayerStateSpec& s = spec(layer_idx);
  if (s.kind == LayerStateKind::kKv) {
    const KvSlot slot = kv_slot(layer_idx);
    return slot.cache->saved_bytes(std::min(n, slot.cache->n_ctx()));
  }
  if (s.kind == LayerStateKind::kRecurrent)
    return sizeof(float) * static_cast<size_t>(s.conv_floats + s.recurrent_floats);
  return 0;
}

void SequenceState::save_layer(int64_t layer_idx, int64_t n, uint8_t* out) const {
  const LayerStateSpec& s = spec(layer_idx);
  if (s.kind == LayerStateKind::kKv) {
    const KvSlot slot = kv_slot(layer_idx);
    slot.cache->save_layer(slot.index, std::min(n, slot.cache->n_ctx()), out);
  } else if (s.kind == LayerStateKind::kRecurrent) {
    std::memcpy(out, recurrent_.data() + layers_[static_cast<size_t>(layer_idx)].recurrent_offset,
                saved_layer_bytes(layer_idx, n));
  }
}

void SequenceState::load_layer(int64_t layer_idx, int64_t n, const uint8_t* in) {
  const LayerStateSpec& s = spec(layer_idx);
  if (s.kind == LayerStateKind::kKv) {
    const KvSlot slot = kv_slot(layer_idx);
    slot.cache->load_layer(slot.index, std::min(n, slot.cache->n_ctx()), in);
  } else if (s.kind == LayerStateKind::kRecurrent) {
    std::memcpy(recurrent_.data() + layers_[static_cast<size_t>(layer_idx)].recurrent_offset, in,
                saved_layer_bytes(layer_idx, n));
  }
}

}  // namespace sniper
