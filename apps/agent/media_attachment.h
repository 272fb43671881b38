// SPDX-License-Identifier: MIT
// Media the user attaches to the next message (/image PATH, /audio PATH): the file is read with a
// byte limit, its format sniffed against the engine's decoder table (PNG, JPEG, WebP, GIF; WAV,
// FLAC, MP3, OGG) and sent as OpenAI content parts (`image_url` with a data URL, `input_audio`
// with base64 data). The server decodes and bounds the pixels and seconds; the agent only checks
// what it can without decoding: the size and the kind. Also: the capability a kind needs in
// /v1/models ("vision", "audio") and the text note that stands for an attachment where the media
// itself is not sent (a backend without the capability, transcripts, saved markdown).
// Invariants: an Attachment always holds valid base64 of a file whose signature matched its kind.
// Pure functions except load_attachment (reads one file); thread-safe.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "media/media_decoder.h"

namespace sniper::agent {

struct Attachment {
  MediaKind kind = MediaKind::kImage;
  std::string name;    // the file name as given (shown in notes)
  std::string format;  // "png", "jpeg", "webp", "gif", "wav", "flac", "mp3", "ogg"
  uint64_t bytes = 0;  // size of the file
  std::string base64;  // the file's bytes, standard base64 with padding
};

// Attachments one message may carry (the server's default limit of media per request).
inline constexpr size_t kMaxAttachments = 16;

// Reads `path` (at most `max_bytes`) and checks that it is media of kind `want`. Errors name the
// file and the problem: missing, a directory, over the byte limit (size and limit), empty, an
// unknown format (the formats accepted for that kind), or the other kind ("is WAV audio, not an
// image: attach it with /audio").
[[nodiscard]] Result<Attachment> load_attachment(const std::string& path, MediaKind want, uint64_t max_bytes);

// Standard base64 (RFC 4648) with padding.
std::string base64_encode(std::span<const uint8_t> bytes);

// The /v1/models capability a kind needs: "vision" for images, "audio" for audio.
const char* capability_for(MediaKind kind);

// "[image: cat.png, png, 12.3 KB]".
std::string attachment_note(const Attachment& a);

// The OpenAI content of a user message: `text` alone (a string) when `media` is empty, else an
// array of parts: the text part, then one part per attachment whose kind is in `allowed` (a note
// in the text part for each other one).
nlohmann::json message_content(const std::string& text, const std::vector<Attachment>& media,
                               const std::set<MediaKind>& allowed);

}  // namespace sniper::agent
