// SPDX-License-Identifier: MIT
// Media in requests (issue 39): images and audio from every API, in one neutral shape.
//
// Each API's parser turns its own media fields into OpenAI-shaped content parts of the neutral
// messages: `{"type": "image_url", "image_url": {"url": "data:...;base64,..."}}` for images
// (OpenAI's own, Ollama's `images`, Anthropic's base64 `image` blocks) and `{"type":
// "input_audio", "input_audio": {"data": BASE64, "format": "wav"}}` for audio. take_media() then
// takes every such part out of the messages, in order, checks what can be checked before any
// decoding (data URLs only, strict base64, the byte limit on the decoded size computed from the
// encoded length, the number of items), decodes the base64, and puts a text part holding
// `marker` in the part's place, so that the chat template renders the marker where the media
// goes (engine/media_prompt.h replaces it with the encoded chunk). Errors name the part's path
// ("messages[0].content[1].image_url.url") and the limit. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "media/media_decoder.h"
#include "server/request_types.h"

namespace sniper::server {

// One media item of a request, decoded from base64 (still encoded as PNG, WAV, ...).
struct MediaInput {
  MediaKind kind = MediaKind::kImage;
  std::vector<uint8_t> bytes;
  std::string field;  // the part's path, for errors
};

// The content part of an image given as base64 (Ollama's images, Anthropic's image blocks):
// an image_url part holding a data URL of `media_type` ("" when unknown: the bytes are sniffed).
// `source` (the field the client sent, "messages[0].images[1]") names the item in errors in
// place of the converted part's path; it travels in the part as kSourceKey. `api` ("ollama",
// "anthropic": kApiKey) lets the error for audio bytes in an image field say that the API has no
// audio field and where audio goes instead.
Json image_part_from_base64(const std::string& base64, std::string_view media_type, std::string_view source = "",
                            std::string_view api = "");

// The keys of a converted part that hold the client's field name (at most kMaxSourceChars) and
// the API it came from.
inline constexpr const char* kSourceKey = "x-sniper-source";
inline constexpr const char* kApiKey = "x-sniper-api";
inline constexpr size_t kMaxSourceChars = 96;

// Why audio cannot go through `api`'s media fields and where it goes ("ollama": the Ollama API
// has no audio field; "anthropic": the Messages API has no audio block; else OpenAI's image_url).
std::string no_audio_field_message(std::string_view api);

// Decodes standard base64 (RFC 4648, padding optional, no whitespace inside, ASCII whitespace
// around it ignored). Errors: a character outside the alphabet (its offset), a bad length,
// more than max_bytes decoded (checked from the length before decoding).
Result<std::vector<uint8_t>> decode_base64(std::string_view text, uint64_t max_bytes);

// True when any message holds an image_url or input_audio part.
bool has_media_parts(const Json& messages);

// Takes the media parts out of `messages` (see above) into *out. `limits` bound the bytes of
// each item and the items of the request. Errors (400, param "messages"): an http(s) or other
// non-data URL, a malformed data URL or base64, an unknown audio format, an item over
// limits.max_bytes, more than limits.max_media items, and an item whose bytes carry the other
// kind's signature (a WAV in an image field names the API's missing audio field).
[[nodiscard]] std::optional<ApiError> take_media(Json* messages, const MediaLimits& limits, std::string_view marker,
                                                 std::vector<MediaInput>* out);

}  // namespace sniper::server
