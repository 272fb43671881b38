// SPDX-License-Identifier: MIT
#include "server/media_input.h"

#include <array>

namespace sniper::server {

namespace {

// The base64 alphabet's values; -1 outside it.
constexpr std::array<int8_t, 256> base64_table() {
  std::array<int8_t, 256> t{};
  for (int8_t& v : t) v = -1;
  for (int i = 0; i < 26; ++i) {
    t['A' + i] = static_cast<int8_t>(i);
    t['a' + i] = static_cast<int8_t>(26 + i);
  }
  for (int i = 0; i < 10; ++i) t['0' + i] = static_cast<int8_t>(52 + i);
  t['+'] = 62;
  t['/'] = 63;
  return t;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string human_bytes(uint64_t n) {
  if (n >= (uint64_t{1} << 20) && n % (uint64_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " bytes";
}

// The media of one part, checked and decoded.
std::optional<ApiError> take_part(const Json& part, const std::string& at, const MediaLimits& limits, MediaInput* out) {
  const std::string type = part["type"].get<std::string>();
  std::string_view data;
  std::string field;
  // A converted part (Ollama's images, Anthropic's image blocks) is named as the client sent it.
  std::string source;
  if (auto src = part.find(kSourceKey);
      src != part.end() && src->is_string() && src->get_ref<const std::string&>().size() <= kMaxSourceChars)
    source = src->get<std::string>();
  if (type == "image_url") {
    out->kind = MediaKind::kImage;
    const Json* url = nullptr;
    if (auto it = part.find("image_url"); it != part.end()) {
      if (it->is_string()) {
        url = &*it;  // a bare string, as some clients send
        field = at + ".image_url";
      } else if (it->is_object() && it->contains("url")) {
        url = &(*it)["url"];
        field = source.empty() ? at + ".image_url.url" : source;
      }
    }
    if (url == nullptr || !url->is_string()) {
      return bad_request(at + ".image_url.url is required and must be a string (a data URL)", "messages");
    }
    const std::string& u = url->get_ref<const std::string&>();
    if (u.starts_with("http://") || u.starts_with("https://")) {
      return bad_request(field +
                             " is an http(s) URL, which this server does not fetch: send the image inline as a data "
                             "URL (data:image/png;base64,...)",
                         "messages", "unsupported_url");
    }
    if (!u.starts_with("data:")) {
      return bad_request(field + " must be a data URL (data:image/png;base64,...), got '" + u.substr(0, 32) + "'",
                         "messages");
    }
    const size_t comma = u.find(',');
    const std::string_view header = std::string_view(u).substr(0, comma == std::string::npos ? 0 : comma);
    if (comma == std::string::npos || !header.ends_with(";base64")) {
      return bad_request(field + " must be a base64 data URL (data:image/png;base64,...)", "messages");
    }
    const std::string_view media_type = header.substr(5, header.size() - 5 - 7);
    if (!media_type.empty() && !media_type.starts_with("image/")) {
      return bad_request(field + " has media type '" + std::string(media_type) + "' but must hold an image (image/...)",
                         "messages");
    }
    data = std::string_view(u).substr(comma + 1);
  } else {
    out->kind = MediaKind::kAudio;
    field = at + ".input_audio";
    auto it = part.find("input_audio");
    if (it == part.end() || !it->is_object() || !it->contains("data") || !(*it)["data"].is_string()) {
      return bad_request(field + ".data is required and must be a base64 string", "messages");
    }
    if (it->contains("format")) {
      const Json& format = (*it)["format"];
      static const std::array<std::string_view, 5> kFormats = {"wav", "mp3", "flac", "ogg", "opus"};
      bool known = false;
      for (std::string_view k : kFormats) known = known || (format.is_string() && format.get<std::string>() == k);
      if (!known) {
        return bad_request(field + ".format is " + format.dump() + " but must be one of wav, mp3, flac, ogg, opus",
                           "messages");
      }
    }
    field += ".data";
    data = (*it)["data"].get_ref<const std::string&>();
  }
  auto bytes = decode_base64(data, limits.max_bytes);
  if (!bytes.ok()) return bad_request(field + ": " + bytes.error().message, "messages");
  if (bytes->empty()) return bad_request(field + " holds no data", "messages");
  // The other kind's signature: refused here, before anything decodes it, with where it goes.
  if (const MediaDecoder* d = find_media_decoder(*bytes); d != nullptr && d->kind != out->kind) {
    if (d->kind == MediaKind::kAudio) {
      std::string api;
      if (auto a = part.find(kApiKey); a != part.end() && a->is_string()) api = a->get<std::string>();
      return bad_request(field + " holds " + d->format + " audio, but " + no_audio_field_message(api), "messages");
    }
    return bad_request(field + " holds a " + std::string(d->format) +
                           " image, but input_audio takes audio only: send images as image_url parts",
                       "messages");
  }
  out->bytes = std::move(bytes).value();
  out->field = field;
  return std::nullopt;
}

bool is_media_part(const Json& part) {
  if (!part.is_object()) return false;
  auto type = part.find("type");
  return type != part.end() && type->is_string() &&
         (type->get_ref<const std::string&>() == "image_url" || type->get_ref<const std::string&>() == "input_audio");
}

}  // namespace

std::string no_audio_field_message(std::string_view api) {
  const std::string where = "send audio to /v1/chat/completions as an OpenAI input_audio part";
  if (api == "ollama") return "the Ollama API has no audio field (images takes images only): " + where;
  if (api == "anthropic") {
    return "the Anthropic Messages API has no audio content block (image blocks take images only): " + where;
  }
  return "image_url takes images only: send audio as an input_audio part";
}

Json image_part_from_base64(const std::string& base64, std::string_view media_type, std::string_view source,
                            std::string_view api) {
  std::string url = "data:";
  url += media_type;
  url += ";base64,";
  url += base64;
  Json part{{"type", "image_url"}, {"image_url", Json{{"url", std::move(url)}}}};
  if (!source.empty()) part[kSourceKey] = std::string(source.substr(0, kMaxSourceChars));
  if (!api.empty()) part[kApiKey] = std::string(api);
  return part;
}

Result<std::vector<uint8_t>> decode_base64(std::string_view text, uint64_t max_bytes) {
  static constexpr std::array<int8_t, 256> kTable = base64_table();
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  size_t n = text.size();
  size_t pad = 0;
  while (pad < 2 && n > 0 && text[n - 1] == '=') {
    --n;
    ++pad;
  }
  if (n % 4 == 1 || (pad > 0 && (n + pad) % 4 != 0)) {
    return make_error("the base64 data is %zu characters long, which no base64 encoding has", text.size());
  }
  const uint64_t decoded = n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1);
  if (decoded > max_bytes) {
    return make_error("the media is %llu bytes, over the limit of %s (serve --media-max-bytes)",
                      static_cast<unsigned long long>(decoded), human_bytes(max_bytes).c_str());
  }
  std::vector<uint8_t> out;
  out.reserve(decoded);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; ++i) {
    const int8_t v = kTable[static_cast<uint8_t>(text[i])];
    if (v < 0) return make_error("the base64 data has an invalid character at offset %zu", i);
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>(acc >> bits));
    }
  }
  return out;
}

bool has_media_parts(const Json& messages) {
  if (!messages.is_array()) return false;
  for (const Json& m : messages) {
    if (!m.is_object()) continue;
    auto content = m.find("content");
    if (content == m.end() || !content->is_array()) continue;
    for (const Json& part : *content) {
      if (is_media_part(part)) return true;
    }
  }
  return false;
}

std::optional<ApiError> take_media(Json* messages, const MediaLimits& limits, std::string_view marker,
                                   std::vector<MediaInput>* out) {
  if (!messages->is_array()) return std::nullopt;
  int64_t count = 0;
  for (size_t i = 0; i < messages->size(); ++i) {
    Json& m = (*messages)[i];
    if (!m.is_object()) continue;
    auto content = m.find("content");
    if (content == m.end() || !content->is_array()) continue;
    for (size_t k = 0; k < content->size(); ++k) {
      Json& part = (*content)[k];
      if (!is_media_part(part)) continue;
      const std::string at = "messages[" + std::to_string(i) + "].content[" + std::to_string(k) + "]";
      if (++count > limits.max_media) {
        return bad_request("the request holds more than " + std::to_string(limits.max_media) + " media items (at " +
                               at + "), the most one request may hold",
                           "messages");
      }
      MediaInput item;
      if (auto e = take_part(part, at, limits, &item)) return e;
      out->push_back(std::move(item));
      part = Json{{"type", "text"}, {"text", std::string(marker)}};
    }
  }
  return std::nullopt;
}

}  // namespace sniper::server
