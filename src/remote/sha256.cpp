// SPDX-License-Identifier: MIT
#include "remote/sha256.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "base/check.h"

namespace sniper {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  CHECK(impl_->ctx != nullptr && EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) == 1, "EVP sha256 init failed");
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::update(const void* data, size_t n) {
  CHECK(EVP_DigestUpdate(impl_->ctx, data, n) == 1, "EVP sha256 update failed");
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CHECK(EVP_DigestFinal_ex(impl_->ctx, md, &len) == 1 && len == 32, "EVP sha256 final failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t n) {
  Sha256 h;
  h.update(data, n);
  return h.hex_digest();
}

Result<std::string> sha256_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  Sha256 h;
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return make_error("cannot read '%s': %s", path.c_str(), std::strerror(err));
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<size_t>(n));
  }
  ::close(fd);
  return h.hex_digest();
}

bool is_sha256_hex(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace sniper
