// SPDX-License-Identifier: MIT
// MediaChunk: one encoded media item as the engine consumes it: the embeddings that take the
// place of its placeholder tokens in the language model, the token grid (for M-RoPE positions),
// whether the language model attends within it both ways, and the hash of the original bytes.
// Two chunks with the same hash and kind are the same media: a second turn over the same image
// reuses the KV cache of the first (prefix reuse compares hashes, never embeddings).
// Front ends (CLI, server, chat, agent) make chunks with Mmproj::encode (media/mmproj.h) and hand
// them to the engine (engine/media_prompt.h) between text pieces.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "media/media_decoder.h"
#include "media/projector.h"

namespace sniper {

// SHA-256 of a media item's encoded bytes.
struct MediaHash {
  std::array<uint8_t, 32> bytes{};
  bool operator==(const MediaHash& other) const = default;
  // 64 lowercase hex digits.
  std::string hex() const;
  // The first 8 bytes, little-endian: a compact key (history markers, logs).
  uint64_t prefix64() const;
};

// Hashes `bytes` (OpenSSL's SHA-256). Thread-safe.
MediaHash hash_media(std::span<const uint8_t> bytes);

struct MediaChunk {
  MediaKind kind = MediaKind::kImage;
  MediaHash hash;
  TokenGrid grid;           // the tokens' grid: nx * ny == n_tokens (audio: n_tokens x 1)
  int64_t dim = 0;          // width of each embedding
  bool non_causal = false;  // the language model attends within the chunk both ways (gemma4v)
  std::string begin_text;   // text mtmd puts before the chunk ("<|image>"), tokenized as text
  std::string end_text;     // and after it ("<image|>")
  std::vector<float> embd;  // [n_tokens][dim]
  int64_t n_tokens() const { return grid.n_tokens(); }
};

}  // namespace sniper
