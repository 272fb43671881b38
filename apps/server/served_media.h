// SPDX-License-Identifier: MIT
// ServedMedia: a served model's projector (serve --mmproj) as the routes use it: the media kinds
// it reads (the capabilities /v1/models and /api/show report), the limits requests are held to,
// and encode(), which turns a request's media item into a MediaChunk on the calling HTTP thread.
// Encodes run one at a time (the projector's scratch is shared) on the served model's encoder
// pool. The last few chunks are kept by the SHA-256 of their bytes, so a conversation that sends
// the same image every turn encodes it once (and the slot's KV cache, which compares the same
// hashes, evaluates it once). Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "media/mmproj.h"
#include "server/media_input.h"

namespace sniper::server {

class ServedMedia {
 public:
  // `mmproj` is borrowed (it must outlive this object) and already checked against the model.
  ServedMedia(Mmproj& mmproj, int n_threads);

  bool supports(MediaKind kind) const { return mmproj_.supports(kind); }
  const MediaLimits& limits() const { return mmproj_.options().limits; }
  const Mmproj& mmproj() const { return mmproj_; }

  // Encodes one item. Errors (400, naming item.field): a kind the projector does not read, an
  // unknown format, a corrupt or truncated file, a limit (pixels, sides).
  [[nodiscard]] std::optional<ApiError> encode(const MediaInput& item, MediaChunk* out);

  // Encodes done and chunks served from the cache, since the start.
  int64_t n_encoded() const;
  int64_t n_cache_hits() const;

 private:
  static constexpr size_t kCacheEntries = 8;
  Mmproj& mmproj_;
  ThreadPool pool_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<const MediaChunk>> cache_;  // most recent first
  int64_t n_encoded_ = 0;
  int64_t n_cache_hits_ = 0;
};

// The message for a media kind a model cannot read ("this model has no vision projector ...").
std::string unsupported_media_message(MediaKind kind, bool has_projector);

}  // namespace sniper::server
