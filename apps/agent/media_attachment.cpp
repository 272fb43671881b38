// SPDX-License-Identifier: MIT
// Attachments: bounded reading, sniffing, base64 and OpenAI content parts (see media_attachment.h).
#include "agent/media_attachment.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace sniper::agent {

namespace {

std::string format_size(uint64_t bytes) {
  char buf[32];
  if (bytes < 1024) std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(bytes));
  else if (bytes < (uint64_t{1} << 20)) std::snprintf(buf, sizeof(buf), "%.1f KB", bytes / 1024.0);
  else std::snprintf(buf, sizeof(buf), "%.1f MB", bytes / 1048576.0);
  return buf;
}

// The formats the decoder table reads for `kind`, e.g. "png, jpeg, webp, gif".
std::string formats_of(MediaKind kind) {
  std::string out;
  for (const MediaDecoder& d : media_decoders()) {
    if (d.kind != kind) continue;
    if (!out.empty()) out += ", ";
    out += d.format;
  }
  return out;
}

std::string mime_of(const Attachment& a) {
  return std::string(a.kind == MediaKind::kImage ? "image/" : "audio/") + a.format;
}

}  // namespace

std::string base64_encode(std::span<const uint8_t> bytes) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{bytes[i]} << 16;
    if (rest == 2) v |= uint32_t{bytes[i + 1]} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

const char* capability_for(MediaKind kind) { return kind == MediaKind::kImage ? "vision" : "audio"; }

std::string attachment_note(const Attachment& a) {
  return "[" + std::string(media_kind_name(a.kind)) + ": " + a.name + ", " + a.format + ", " + format_size(a.bytes) +
         "]";
}

Result<Attachment> load_attachment(const std::string& path, MediaKind want, uint64_t max_bytes) {
  const char* kind = media_kind_name(want);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error("cannot attach '%s': %s", path.c_str(), std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error("cannot attach '%s': not a regular file", path.c_str());
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return make_error("cannot attach '%s': the file is empty", path.c_str());
  if (size > max_bytes)
    return make_error("cannot attach '%s': it holds %s, over the limit of %s per %s", path.c_str(),
                      format_size(size).c_str(), format_size(max_bytes).c_str(), kind);
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error("cannot attach '%s': %s", path.c_str(), std::strerror(errno));
  std::vector<uint8_t> bytes(size);
  f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(f.gcount()) != size)
    return make_error("cannot attach '%s': read %lld of %llu bytes (the file changed?)", path.c_str(),
                      static_cast<long long>(f.gcount()), static_cast<unsigned long long>(size));
  const MediaDecoder* d = find_media_decoder(bytes);
  if (d == nullptr)
    return make_error("cannot attach '%s': not a known %s format (%s %s are read)", path.c_str(), kind,
                      formats_of(want).c_str(), want == MediaKind::kImage ? "images" : "files");
  if (d->kind != want)
    return make_error("cannot attach '%s': it is %s%s %s, not %s: attach it with /%s", path.c_str(),
                      d->kind == MediaKind::kImage ? "a " : "", d->format, media_kind_name(d->kind),
                      want == MediaKind::kImage ? "an image" : "audio", media_kind_name(d->kind));
  Attachment a;
  a.kind = want;
  size_t slash = path.find_last_of('/');
  a.name = slash == std::string::npos ? path : path.substr(slash + 1);
  a.format = d->format;
  a.bytes = size;
  a.base64 = base64_encode(bytes);
  return a;
}

nlohmann::json message_content(const std::string& text, const std::vector<Attachment>& media,
                               const std::set<MediaKind>& allowed) {
  if (media.empty()) return text;
  nlohmann::json parts = nlohmann::json::array();
  std::string notes;
  for (const Attachment& a : media) {
    if (allowed.count(a.kind) != 0) continue;
    notes += attachment_note(a) + " (not sent: this model cannot read " + media_kind_name(a.kind) + ")\n";
  }
  parts.push_back({{"type", "text"}, {"text", notes + text}});
  for (const Attachment& a : media) {
    if (allowed.count(a.kind) == 0) continue;
    if (a.kind == MediaKind::kImage) {
      parts.push_back({{"type", "image_url"}, {"image_url", {{"url", "data:" + mime_of(a) + ";base64," + a.base64}}}});
    } else {
      parts.push_back({{"type", "input_audio"}, {"input_audio", {{"data", a.base64}, {"format", a.format}}}});
    }
  }
  return parts;
}

}  // namespace sniper::agent
