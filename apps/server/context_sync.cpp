// SPDX-License-Identifier: MIT
#include "server/context_sync.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session_state.h"
#include "remote/sha256.h"
#include "server/bounded_json.h"

namespace sniper::server {

namespace {

constexpr uint64_t kMaxManifestBytes = 64 << 10;
constexpr uint64_t kMaxContextBytes = uint64_t{1} << 40;
constexpr const char* kManifestFormat = "sniper-context";
constexpr int kManifestVersion = 1;
// Context file header fields (engine/session_state.h): magic, version, fingerprint, n_tokens.
constexpr size_t kHeaderBytes = 72;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

bool parse_hex16(const std::string& s, uint64_t* v) {
  if (s.size() != 16) return false;
  *v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    *v = (*v << 4) | static_cast<uint64_t>(d);
  }
  return true;
}

// What push needs from a local context file, read in one streaming pass that also checks the
// file's own FNV-1a trailer.
struct LocalContext {
  uint64_t bytes = 0;
  std::string sha256;
  uint64_t model_fingerprint = 0;
  int64_t n_tokens = 0;
};

Result<LocalContext> inspect_local(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open '%s': %s", path.c_str(), std::strerror(errno));
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < static_cast<off_t>(kHeaderBytes + 8) || ::lseek(fd, 0, SEEK_SET) != 0) {
    ::close(fd);
    return make_error("'%s' is too short to be a context file", path.c_str());
  }
  LocalContext out;
  out.bytes = static_cast<uint64_t>(size);
  const uint64_t body = out.bytes - 8;  // everything the trailer hashes
  Sha256 sha;
  uint64_t fnv = kFnvOffset;
  std::vector<char> buf(size_t{1} << 20);
  std::string head, tail;
  uint64_t pos = 0;
  while (pos < out.bytes) {
    const ssize_t n = ::read(fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), out.bytes - pos)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return make_error("cannot read '%s' (%" PRIu64 " of %" PRIu64 " bytes)", path.c_str(), pos, out.bytes);
    }
    const auto un = static_cast<uint64_t>(n);
    sha.update(buf.data(), un);
    if (pos < body) fnv = fnv1a64(buf.data(), static_cast<size_t>(std::min(un, body - pos)), fnv);
    if (head.size() < kHeaderBytes) head.append(buf.data(), std::min<size_t>(un, kHeaderBytes - head.size()));
    for (uint64_t i = std::max(pos, body); i < pos + un; ++i) tail += buf[static_cast<size_t>(i - pos)];
    pos += un;
  }
  ::close(fd);
  if (std::memcmp(head.data(), "SNPRKV1\0", 8) != 0)
    return make_error("'%s' is not a sniper context (bad magic)", path.c_str());
  uint32_t version = 0;
  uint64_t want = 0;
  std::memcpy(&version, head.data() + 8, 4);
  std::memcpy(&out.model_fingerprint, head.data() + 16, 8);
  std::memcpy(&out.n_tokens, head.data() + 56, 8);
  std::memcpy(&want, tail.data(), 8);
  // Version 2 files still load; version 4 is a state with media (session_state.h).
  if (version != kSessionStateVersion && version != kSessionStateMediaVersion && version != 2) {
    return make_error("'%s' has context file version %u but this build reads versions 2 to %u", path.c_str(), version,
                      kSessionStateMediaVersion);
  }
  if (want != fnv) {
    return make_error("'%s' is corrupt: checksum %016" PRIx64 " but the contents hash to %016" PRIx64, path.c_str(),
                      want, fnv);
  }
  out.sha256 = sha.hex_digest();
  return out;
}

std::string make_manifest(const std::string& name, const LocalContext& c) {
  nlohmann::ordered_json j;
  j["format"] = kManifestFormat;
  j["version"] = kManifestVersion;
  j["name"] = name;
  j["bytes"] = c.bytes;
  j["sha256"] = c.sha256;
  j["model_fingerprint"] = hex16(c.model_fingerprint);
  j["n_tokens"] = c.n_tokens;
  j["created"] = static_cast<int64_t>(std::time(nullptr));
  return j.dump(2) + "\n";
}

struct Manifest {
  uint64_t bytes = 0;
  std::string sha256;
  uint64_t model_fingerprint = 0;
  int64_t n_tokens = 0;
};

Result<Manifest> parse_manifest(std::string_view text, const std::string& name) {
  nlohmann::json j;
  JsonLimits limits;
  limits.max_depth = 4;
  limits.max_values = 256;
  const std::string err = parse_json_bounded(text, &j, limits);
  if (!err.empty()) return make_error("the manifest is not valid JSON: %s", err.c_str());
  if (!j.is_object()) return make_error("the manifest is not a JSON object");
  auto str = [&](const char* key) -> std::string {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (str("format") != kManifestFormat) return make_error("the manifest's format is not '%s'", kManifestFormat);
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<int64_t>() != kManifestVersion) {
    return make_error("the manifest's version must be %d", kManifestVersion);
  }
  if (str("name") != name)
    return make_error("the manifest names '%s' but context '%s' was asked for", str("name").c_str(), name.c_str());
  Manifest m;
  auto bytes = j.find("bytes");
  if (bytes == j.end() || !bytes->is_number_unsigned() || bytes->get<uint64_t>() < kHeaderBytes + 8 ||
      bytes->get<uint64_t>() > kMaxContextBytes) {
    return make_error("the manifest's bytes must be an integer in [%zu, 2^40]", kHeaderBytes + 8);
  }
  m.bytes = bytes->get<uint64_t>();
  m.sha256 = str("sha256");
  if (!is_sha256_hex(m.sha256))
    return make_error("the manifest's sha256 '%s' is not 64 lowercase hex digits", m.sha256.c_str());
  if (!parse_hex16(str("model_fingerprint"), &m.model_fingerprint)) {
    return make_error("the manifest's model_fingerprint '%s' is not 16 lowercase hex digits",
                      str("model_fingerprint").c_str());
  }
  auto n_tokens = j.find("n_tokens");
  if (n_tokens == j.end() || !n_tokens->is_number_integer() || n_tokens->get<int64_t>() < 0) {
    return make_error("the manifest's n_tokens must be a non-negative integer");
  }
  m.n_tokens = n_tokens->get<int64_t>();
  return m;
}

// A hidden temp name in the store's directory (ContextStore never lists names starting with '.').
std::string temp_path(const ContextStore& store, const std::string& name) {
  static std::atomic<uint64_t> counter{0};
  return store.dir() + "/." + name + ".pull." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

}  // namespace

const char* sync_failure_code(SyncFailure f) {
  switch (f) {
    case SyncFailure::kNone: return "";
    case SyncFailure::kInvalid: return "invalid_context_file";
    case SyncFailure::kNotFound: return "context_not_found";
    case SyncFailure::kForbidden: return "remote_forbidden";
    case SyncFailure::kUnreachable: return "remote_unreachable";
    case SyncFailure::kCorrupt: return "remote_context_corrupt";
    case SyncFailure::kModelMismatch: return "context_model_mismatch";
    case SyncFailure::kRemote: return "remote_error";
  }
  return "";
}

SyncFailure ContextSync::remote_failure() const {
  const long status = client_.last_http_status();
  if (status == 0) return SyncFailure::kUnreachable;
  if (status == 401 || status == 403) return SyncFailure::kForbidden;
  if (status == 404) return SyncFailure::kNotFound;
  return SyncFailure::kRemote;
}

Result<ContextTransfer> ContextSync::push(const ContextStore& store, const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  failure_ = SyncFailure::kNone;
  Status valid = ContextStore::validate_name(name);
  if (!valid.ok()) return fail(SyncFailure::kInvalid, valid.error());
  if (!store.exists(name)) {
    return fail(SyncFailure::kNotFound,
                make_error("no saved context named '%s' in %s", name.c_str(), store.dir().c_str()));
  }
  const std::string path = store.path_of(name);
  auto local = inspect_local(path);
  if (!local.ok()) return fail(SyncFailure::kInvalid, local.error());
  const std::string data_key = where_.key(name + ".ctx");
  const std::string manifest_key = data_key + ".json";
  // Manifest out first, data, manifest in last: at no point does a manifest describe data that
  // is not completely uploaded.
  Status st = client_.remove(where_.bucket, manifest_key);
  if (st.ok()) {
    st = client_.put_file(where_.bucket, data_key, path, local->sha256,
                          {{"sha256", local->sha256}, {"model-fingerprint", hex16(local->model_fingerprint)}});
  }
  if (st.ok()) st = client_.put_bytes(where_.bucket, manifest_key, make_manifest(name, *local), "application/json");
  if (!st.ok()) return fail(remote_failure(), st.error());
  ContextTransfer t;
  t.name = name;
  t.url = where_.url(name + ".ctx");
  t.bytes = local->bytes;
  t.sha256 = local->sha256;
  t.model_fingerprint = local->model_fingerprint;
  t.n_tokens = local->n_tokens;
  t.ms = ms_since(t0);
  return t;
}

Result<ContextTransfer> ContextSync::pull(const ContextStore& store, const std::string& name,
                                          std::optional<uint64_t> model_fingerprint) {
  const auto t0 = std::chrono::steady_clock::now();
  failure_ = SyncFailure::kNone;
  Status valid = ContextStore::validate_name(name);
  if (!valid.ok()) return fail(SyncFailure::kInvalid, valid.error());
  const std::string data_key = where_.key(name + ".ctx");
  const std::string manifest_key = data_key + ".json";
  auto text = client_.get_bytes(where_.bucket, manifest_key, kMaxManifestBytes);
  if (!text.ok()) {
    if (client_.last_http_status() == 404) {
      return fail(
          SyncFailure::kNotFound,
          make_error("no context '%s' at %s: its manifest %s is missing (a push that did not finish leaves none)",
                     name.c_str(), where_.url(name + ".ctx").c_str(), where_.url(name + ".ctx.json").c_str()));
    }
    return fail(remote_failure(), text.error());
  }
  auto manifest = parse_manifest(*text, name);
  if (!manifest.ok()) {
    return fail(SyncFailure::kCorrupt,
                make_error("%s: %s", where_.url(name + ".ctx.json").c_str(), manifest.error().message.c_str()));
  }
  if (model_fingerprint && *model_fingerprint != manifest->model_fingerprint) {
    return fail(
        SyncFailure::kModelMismatch,
        make_error("context '%s' at %s was saved with another model file (fingerprint %016" PRIx64
                   ", this model is %016" PRIx64 ")",
                   name.c_str(), where_.url(name + ".ctx").c_str(), manifest->model_fingerprint, *model_fingerprint));
  }
  std::error_code ec;
  std::filesystem::create_directories(store.dir(), ec);
  if (ec)
    return fail(SyncFailure::kInvalid, make_error("cannot create '%s': %s", store.dir().c_str(), ec.message().c_str()));
  const std::string tmp = temp_path(store, name);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(SyncFailure::kInvalid, make_error("cannot create '%s': %s", tmp.c_str(), std::strerror(errno)));
  uint64_t n_bytes = 0;
  std::string sha;
  Status st = client_.get_to_fd(where_.bucket, data_key, fd, manifest->bytes, &n_bytes, &sha);
  SyncFailure why = st.ok() ? SyncFailure::kNone : remote_failure();
  if (st.ok() && (n_bytes != manifest->bytes || sha != manifest->sha256)) {
    why = SyncFailure::kCorrupt;
    st = make_error("the download of %s is corrupt: %" PRIu64 " bytes with sha256 %s but the manifest says %" PRIu64
                    " bytes with sha256 %s",
                    where_.url(name + ".ctx").c_str(), n_bytes, sha.c_str(), manifest->bytes, manifest->sha256.c_str());
  }
  if (st.ok() && ::fsync(fd) != 0) {
    why = SyncFailure::kInvalid;
    st = make_error("cannot flush '%s': %s", tmp.c_str(), std::strerror(errno));
  }
  ::close(fd);
  uint64_t file_fingerprint = 0;
  if (st.ok()) {
    auto parsed = read_session_state_file(tmp);  // the file's own checksum and layout
    if (!parsed.ok()) {
      why = SyncFailure::kCorrupt;
      st = make_error("the download of %s is not a valid context: %s", where_.url(name + ".ctx").c_str(),
                      parsed.error().message.c_str());
    } else if (parsed->model_fingerprint != manifest->model_fingerprint) {
      why = SyncFailure::kCorrupt;
      st = make_error("the download of %s has model fingerprint %016" PRIx64 " but its manifest says %016" PRIx64,
                      where_.url(name + ".ctx").c_str(), parsed->model_fingerprint, manifest->model_fingerprint);
    } else {
      file_fingerprint = parsed->model_fingerprint;
    }
  }
  if (st.ok() && std::rename(tmp.c_str(), store.path_of(name).c_str()) != 0) {
    why = SyncFailure::kInvalid;
    st = make_error("cannot rename '%s' to '%s': %s", tmp.c_str(), store.path_of(name).c_str(), std::strerror(errno));
  }
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return fail(why, st.error());
  }
  ContextTransfer t;
  t.name = name;
  t.url = where_.url(name + ".ctx");
  t.bytes = n_bytes;
  t.sha256 = sha;
  t.model_fingerprint = file_fingerprint;
  t.n_tokens = manifest->n_tokens;
  t.ms = ms_since(t0);
  return t;
}

Result<std::vector<RemoteContext>> ContextSync::list() {
  failure_ = SyncFailure::kNone;
  const std::string dir = where_.prefix.empty() ? "" : where_.prefix + "/";
  auto objects = client_.list(where_.bucket, dir);
  if (!objects.ok()) return fail(remote_failure(), objects.error());
  std::map<std::string, uint64_t> data;
  std::map<std::string, std::string> manifests;
  for (const S3Object& o : *objects) {
    std::string rest = o.key.substr(dir.size());
    if (rest.size() > 9 && rest.compare(rest.size() - 9, 9, ".ctx.json") == 0) {
      manifests[rest.substr(0, rest.size() - 9)] = o.last_modified;
    } else if (rest.size() > 4 && rest.compare(rest.size() - 4, 4, ".ctx") == 0) {
      data[rest.substr(0, rest.size() - 4)] = o.bytes;
    }
  }
  std::vector<RemoteContext> out;
  for (const auto& [name, modified] : manifests) {
    auto it = data.find(name);
    if (it == data.end() || !ContextStore::validate_name(name).ok()) continue;
    out.push_back({name, it->second, modified});
  }
  return out;
}

}  // namespace sniper::server
