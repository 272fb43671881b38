// SPDX-License-Identifier: MIT
#include "media/media_chunk.h"

#include <openssl/evp.h>

#include "base/check.h"

namespace sniper {

std::string MediaHash::hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(64);
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

uint64_t MediaHash::prefix64() const {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[static_cast<size_t>(i)];
  return v;
}

MediaHash hash_media(std::span<const uint8_t> bytes) {
  MediaHash h;
  unsigned int len = 0;
  CHECK(EVP_Digest(bytes.data(), bytes.size(), h.bytes.data(), &len, EVP_sha256(), nullptr) == 1 && len == 32,
        "SHA-256 failed");
  return h;
}

}  // namespace sniper
