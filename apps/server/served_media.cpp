// SPDX-License-Identifier: MIT
#include "server/served_media.h"

namespace sniper::server {

ServedMedia::ServedMedia(Mmproj& mmproj, int n_threads) : mmproj_(mmproj), pool_(std::max(1, n_threads)) {}

std::string unsupported_media_message(MediaKind kind, bool has_projector) {
  if (kind == MediaKind::kAudio) {
    return has_projector ? "this model's projector has no audio encoder (a gemma4a mmproj reads audio)"
                         : "this model has no audio encoder: start the server with --mmproj FILE (a gemma4a mmproj, "
                           "Gemma 4 E2B/E4B) to send audio";
  }
  return has_projector ? "this model's projector reads no images"
                       : "this model has no vision projector: start the server with --mmproj FILE (the model's mmproj "
                         "GGUF) to send images";
}

std::optional<ApiError> ServedMedia::encode(const MediaInput& item, MediaChunk* out) {
  if (!mmproj_.supports(item.kind))
    return bad_request(item.field + ": " + unsupported_media_message(item.kind, true), "messages");
  const MediaHash hash = hash_media(item.bytes);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if ((*it)->hash == hash && (*it)->kind == item.kind) {
      *out = **it;
      auto hit = *it;
      cache_.erase(it);
      cache_.push_front(std::move(hit));
      ++n_cache_hits_;
      return std::nullopt;
    }
  }
  auto chunk = mmproj_.encode(item.bytes, pool_);
  if (!chunk.ok()) return bad_request(item.field + ": " + chunk.error().message, "messages");
  if (chunk->kind != item.kind) {
    return bad_request(
        item.field + " holds " + media_kind_name(chunk->kind) + " data but was sent as " + media_kind_name(item.kind),
        "messages");
  }
  ++n_encoded_;
  *out = *chunk;
  cache_.push_front(std::make_shared<const MediaChunk>(std::move(chunk).value()));
  if (cache_.size() > kCacheEntries) cache_.pop_back();
  return std::nullopt;
}

int64_t ServedMedia::n_encoded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_encoded_;
}

int64_t ServedMedia::n_cache_hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return n_cache_hits_;
}

}  // namespace sniper::server
