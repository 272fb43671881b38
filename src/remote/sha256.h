// SPDX-License-Identifier: MIT
// Sha256: incremental SHA-256 (OpenSSL's EVP digest; no hand-written crypto), for the checksums
// that context files carry to and from object storage.
// Thread-compatible: one object per stream.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "base/result.h"

namespace sniper {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t n);
  // The digest of everything updated so far as 64 lowercase hex digits. Call once.
  std::string hex_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The SHA-256 of a byte string, as 64 lowercase hex digits.
std::string sha256_hex(const void* data, size_t n);

// Streams the file at `path` through SHA-256. Errors name the path.
[[nodiscard]] Result<std::string> sha256_file(const std::string& path);

// True when `s` is 64 lowercase hex digits.
bool is_sha256_hex(const std::string& s);

}  // namespace sniper
