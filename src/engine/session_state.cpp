// SPDX-License-Identifier: MIT
#include "engine/session_state.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "base/check.h"

namespace sniper {

namespace {

constexpr char kMagic[8] = {'S', 'N', 'P', 'R', 'K', 'V', '1', '\0'};
constexpr size_t kHeaderBytes = 72;

template <typename T>
void put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(std::string_view bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// Bytes of one layer's K (or V) rows for n positions.
uint64_t layer_part_bytes(const SessionState& s) { return s.row_bytes * static_cast<uint64_t>(s.n_tokens()); }

}  // namespace

uint64_t fnv1a64(const void* data, size_t n, uint64_t hash) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

Result<uint64_t> model_fingerprint(const GgufFile& file) {
  std::ifstream f(file.path, std::ios::binary);
  if (!f) return make_error("cannot open '%s' to fingerprint the model", file.path.c_str());
  std::vector<char> buf(1 << 20);
  uint64_t left = file.data_offset;
  uint64_t hash = kFnvOffset;
  while (left > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    f.read(buf.data(), static_cast<std::streamsize>(n));
    if (static_cast<size_t>(f.gcount()) != n) return make_error("'%s' ended while fingerprinting its header", file.path.c_str());
    hash = fnv1a64(buf.data(), n, hash);
    left -= n;
  }
  return fnv1a64(&file.file_size, sizeof(file.file_size), hash);
}

SessionState capture_session_state(const Session& session, uint64_t fingerprint) {
  const KvCache& kv = session.kv();
  const ModelConfig& c = session.model().config();
  SessionState s;
  s.model_fingerprint = fingerprint;
  s.kv_type = kv.type();
  s.n_layers = kv.n_layers();
  s.n_kv_heads = c.n_kv_heads;
  s.head_dim = c.head_dim;
  s.n_ctx = kv.n_ctx();
  s.row_bytes = kv.position_bytes();
  s.tokens = session.history();
  const int64_t n = s.n_tokens();
  const size_t part = layer_part_bytes(s);
  s.kv.resize(2 * part * static_cast<size_t>(s.n_layers));
  for (int64_t l = 0; l < s.n_layers; ++l) kv.save_layer(l, n, s.kv.data() + 2 * part * static_cast<size_t>(l));
  return s;
}

Status check_compatible(const SessionState& s, const Session& session, uint64_t fingerprint) {
  const KvCache& kv = session.kv();
  const ModelConfig& c = session.model().config();
  if (s.model_fingerprint != fingerprint) {
    return make_error("the saved context was made with another model file (fingerprint %016llx, this model is %016llx)",
                      static_cast<unsigned long long>(s.model_fingerprint), static_cast<unsigned long long>(fingerprint));
  }
  if (s.kv_type != kv.type()) {
    return make_error("the saved context has a %s KV cache but the server uses %s", kv_type_name(s.kv_type),
                      kv_type_name(kv.type()));
  }
  if (s.n_layers != kv.n_layers() || s.n_kv_heads != c.n_kv_heads || s.head_dim != c.head_dim ||
      s.row_bytes != kv.position_bytes()) {
    return make_error("the saved context's KV shape (layers %ld, kv heads %ld, head_dim %ld) differs from the model's "
                      "(%ld, %ld, %ld)", static_cast<long>(s.n_layers), static_cast<long>(s.n_kv_heads),
                      static_cast<long>(s.head_dim), static_cast<long>(kv.n_layers()), static_cast<long>(c.n_kv_heads),
                      static_cast<long>(c.head_dim));
  }
  if (s.n_tokens() > kv.n_ctx()) {
    return make_error("the saved context holds %ld tokens but the server's context is %ld", static_cast<long>(s.n_tokens()),
                      static_cast<long>(kv.n_ctx()));
  }
  for (int32_t t : s.tokens) {
    if (t < 0 || t >= c.vocab_size) return make_error("the saved context holds token %d outside the vocabulary", t);
  }
  return ok_status();
}

void restore_session_state(const SessionState& s, Session& session) {
  KvCache& kv = session.kv_mut();
  CHECK(s.row_bytes == kv.position_bytes() && s.n_layers == kv.n_layers() && s.n_tokens() <= kv.n_ctx(),
        "restore_session_state without check_compatible");
  const size_t part = layer_part_bytes(s);
  for (int64_t l = 0; l < s.n_layers; ++l) kv.load_layer(l, s.n_tokens(), s.kv.data() + 2 * part * static_cast<size_t>(l));
  session.set_history(s.tokens);
}

std::string serialize_session_state(const SessionState& s) {
  std::string out;
  out.reserve(kHeaderBytes + s.tokens.size() * 4 + s.kv.size() + 8);
  out.append(kMagic, sizeof(kMagic));
  put<uint32_t>(&out, kSessionStateVersion);
  put<uint32_t>(&out, s.kv_type == KvType::kF16 ? 0u : 1u);
  put<uint64_t>(&out, s.model_fingerprint);
  put<int64_t>(&out, s.n_layers);
  put<int64_t>(&out, s.n_kv_heads);
  put<int64_t>(&out, s.head_dim);
  put<int64_t>(&out, s.n_ctx);
  put<int64_t>(&out, s.n_tokens());
  put<uint64_t>(&out, s.row_bytes);
  out.append(reinterpret_cast<const char*>(s.tokens.data()), s.tokens.size() * sizeof(int32_t));
  out.append(reinterpret_cast<const char*>(s.kv.data()), s.kv.size());
  put<uint64_t>(&out, fnv1a64(out.data(), out.size()));
  return out;
}

Result<SessionState> parse_session_state(std::string_view bytes) {
  if (bytes.size() < kHeaderBytes + 8) {
    return make_error("the context file is %zu bytes, too short for a header (%zu)", bytes.size(), kHeaderBytes + 8);
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) return make_error("the file is not a sniper context (bad magic)");
  const uint32_t version = get<uint32_t>(bytes, 8);
  if (version != kSessionStateVersion) {
    return make_error("the context file has version %u but this build reads version %u", version, kSessionStateVersion);
  }
  const uint64_t want = get<uint64_t>(bytes, bytes.size() - 8);
  const uint64_t got = fnv1a64(bytes.data(), bytes.size() - 8);
  if (want != got) {
    return make_error("the context file is corrupt: checksum %016llx but the contents hash to %016llx",
                      static_cast<unsigned long long>(want), static_cast<unsigned long long>(got));
  }
  SessionState s;
  const uint32_t type = get<uint32_t>(bytes, 12);
  if (type > 1) return make_error("the context file's kv type is %u but must be 0 (f16) or 1 (q8_0)", type);
  s.kv_type = type == 0 ? KvType::kF16 : KvType::kQ8_0;
  s.model_fingerprint = get<uint64_t>(bytes, 16);
  s.n_layers = get<int64_t>(bytes, 24);
  s.n_kv_heads = get<int64_t>(bytes, 32);
  s.head_dim = get<int64_t>(bytes, 40);
  s.n_ctx = get<int64_t>(bytes, 48);
  const int64_t n_tokens = get<int64_t>(bytes, 56);
  s.row_bytes = get<uint64_t>(bytes, 64);
  constexpr int64_t kMaxDim = int64_t{1} << 24;
  if (s.n_layers < 1 || s.n_layers > 4096 || s.n_kv_heads < 1 || s.n_kv_heads > 4096 || s.head_dim < 1 ||
      s.head_dim > 65536 || n_tokens < 0 || n_tokens > kMaxDim || s.row_bytes == 0 || s.row_bytes > (uint64_t{1} << 32)) {
    return make_error("the context file's shape is out of range (layers %ld, kv heads %ld, head_dim %ld, tokens %ld)",
                      static_cast<long>(s.n_layers), static_cast<long>(s.n_kv_heads), static_cast<long>(s.head_dim),
                      static_cast<long>(n_tokens));
  }
  const uint64_t kv_bytes = 2 * s.row_bytes * static_cast<uint64_t>(n_tokens) * static_cast<uint64_t>(s.n_layers);
  const uint64_t expect = kHeaderBytes + static_cast<uint64_t>(n_tokens) * 4 + kv_bytes + 8;
  if (expect != bytes.size()) {
    return make_error("the context file is %zu bytes but its header describes %llu", bytes.size(),
                      static_cast<unsigned long long>(expect));
  }
  s.tokens.resize(static_cast<size_t>(n_tokens));
  std::memcpy(s.tokens.data(), bytes.data() + kHeaderBytes, s.tokens.size() * 4);
  s.kv.assign(bytes.begin() + static_cast<long>(kHeaderBytes + s.tokens.size() * 4), bytes.end() - 8);
  return s;
}

Status write_session_state_file(const std::string& path, const SessionState& state) {
  const std::string bytes = serialize_session_state(state);
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error("cannot create '%s': %s", tmp.c_str(), std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error("cannot write '%s': %s", tmp.c_str(), std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot flush '%s': %s", tmp.c_str(), std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return make_error("cannot rename '%s' to '%s': %s", tmp.c_str(), path.c_str(), std::strerror(err));
  }
  return ok_status();
}

Result<SessionState> read_session_state_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  std::string bytes;
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return make_error("cannot seek in '%s'", path.c_str());
  }
  bytes.resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (done != bytes.size()) return make_error("'%s' shrank while being read (%zu of %zu bytes)", path.c_str(), done, bytes.size());
  auto state = parse_session_state(bytes);
  if (!state.ok()) return make_error("%s: %s", path.c_str(), state.error().message.c_str());
  return state;
}

}  // namespace sniper
