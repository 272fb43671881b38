// SPDX-License-Identifier: MIT
#include "server/model_facts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/session_state.h"
#include "gguf/format.h"
#include "io/page_cache.h"
#include "remote/sha256.h"
#include "server/model_sources.h"

namespace sniper::server {

namespace fs = std::filesystem;

namespace {

constexpr size_t kHashBlockBytes = size_t{4} << 20;
constexpr uint64_t kMaxCacheFileBytes = 64 << 10;

struct FileStamp {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
};

bool stamp_of(const std::string& path, FileStamp* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  out->size = static_cast<uint64_t>(st.st_size);
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return true;
}

// SHA-256 of the files as one stream, reading around the page cache (DONTNEED after each block,
// so hashing a large model does not push a memory-capped server's pages out). Empty when a file
// cannot be read or `stop` turns true.
std::string hash_files(const std::vector<std::string>& paths, const std::atomic<bool>& stop) {
  Sha256 sha;
  std::vector<char> block(kHashBlockBytes);
  for (const std::string& path : paths) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "";
    off_t at = 0;
    while (true) {
      if (stop.load()) {
        ::close(fd);
        return "";
      }
      const ssize_t n = ::pread(fd, block.data(), block.size(), at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ::close(fd);
        return "";
      }
      if (n == 0) break;
      sha.update(block.data(), static_cast<size_t>(n));
      drop_page_cache(fd, static_cast<uint64_t>(at), static_cast<uint64_t>(n));
      at += n;
    }
    ::close(fd);
  }
  return sha.hex_digest();
}

}  // namespace

std::string file_type_name(int64_t t) {
  static const std::map<int64_t, const char*> kNames = {
      {0, "F32"},     {1, "F16"},     {2, "Q4_0"},       {3, "Q4_1"},    {7, "Q8_0"},     {8, "Q5_0"},
      {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"},    {12, "Q3_K_M"}, {13, "Q3_K_L"},  {14, "Q4_K_S"},
      {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"},    {18, "Q6_K"},   {19, "IQ2_XXS"}, {20, "IQ2_XS"},
      {21, "Q2_K_S"}, {22, "IQ3_XS"}, {23, "IQ3_XXS"},   {24, "IQ1_S"},  {25, "IQ4_NL"},  {26, "IQ3_S"},
      {27, "IQ3_M"},  {28, "IQ2_S"},  {29, "IQ2_M"},     {30, "IQ4_XS"}, {31, "IQ1_M"},   {32, "BF16"},
      {36, "TQ1_0"},  {37, "TQ2_0"},  {38, "MXFP4_MOE"},
  };
  auto it = kNames.find(t);
  return it == kNames.end() ? "" : it->second;
}

std::string quantization_level(const GgufFile& gguf) {
  auto ftype = gguf.get_int_or("general.file_type", -1);
  if (ftype.ok() && *ftype >= 0) {
    const std::string name = file_type_name(*ftype);
    if (!name.empty()) return name;
  }
  std::map<uint32_t, uint64_t> bytes_by_type;
  for (const GgufTensorInfo& t : gguf.tensors()) {
    if (t.n_dims >= 2) bytes_by_type[static_cast<uint32_t>(t.type)] += t.nbytes;
  }
  uint64_t best = 0;
  std::string quant = "unknown";
  for (const auto& [type, bytes] : bytes_by_type) {
    if (bytes <= best) continue;
    best = bytes;
    const char* name = ggml_type_upper_name(type);
    quant = name != nullptr ? name : "unknown";
  }
  return quant;
}

std::vector<std::string> model_part_paths(const std::string& path) {
  std::string base;
  int part = 0, n_parts = 0;
  const fs::path p(path);
  if (!parse_split_stem(p.stem().string(), &base, &part, &n_parts)) return {path};
  std::vector<std::string> out;
  for (int i = 1; i <= n_parts; ++i) {
    char tail[32];
    std::snprintf(tail, sizeof(tail), "-%05d-of-%05d.gguf", i, n_parts);
    out.push_back((p.parent_path() / (base + tail)).string());
  }
  return out;
}

FileDigests::FileDigests(std::string cache_dir, uint64_t min_cached_bytes)
    : cache_dir_(std::move(cache_dir)), min_cached_bytes_(min_cached_bytes) {
  worker_ = std::thread([this] { run(); });
}

FileDigests::~FileDigests() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_.store(true);
  cv_.notify_all();
  worker_.join();
}

std::string FileDigests::default_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/sniper/digests";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/sniper/digests";
  return "";
}

std::string FileDigests::digest(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = known_.find(path);
  if (it != known_.end()) return it->second.sha256;
  Known& k = known_[path];
  k.sha256 = read_cache(path, model_part_paths(path));
  if (k.sha256.empty()) {
    k.pending = true;
    queue_.push_back(path);
    cv_.notify_all();
  }
  return k.sha256;
}

void FileDigests::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const std::string path = queue_.front();
    queue_.pop_front();
    lock.unlock();
    const std::vector<std::string> parts = model_part_paths(path);
    const std::string sha = hash_files(parts, stop_);
    if (!sha.empty()) write_cache(path, parts, sha);
    lock.lock();
    Known& k = known_[path];
    k.pending = false;
    k.sha256 = sha;
  }
}

std::string FileDigests::cache_file(const std::string& path) const {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.json", static_cast<unsigned long long>(fnv1a64(path.data(), path.size())));
  return cache_dir_ + "/" + name;
}

std::string FileDigests::read_cache(const std::string& path, const std::vector<std::string>& parts) const {
  if (cache_dir_.empty()) return "";
  const std::string file = cache_file(path);
  std::error_code ec;
  const auto bytes = fs::file_size(file, ec);
  if (ec || bytes > kMaxCacheFileBytes) return "";
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || j.value("path", "") != path || !j.contains("parts") || !j["parts"].is_array() ||
      j["parts"].size() != parts.size()) {
    return "";
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    const nlohmann::json& p = j["parts"][i];
    FileStamp now;
    if (!p.is_object() || !stamp_of(parts[i], &now) || p.value("path", "") != parts[i] ||
        p.value("size", uint64_t{0}) != now.size || p.value("mtime_ns", int64_t{0}) != now.mtime_ns) {
      return "";
    }
  }
  const std::string sha = j.value("sha256", "");
  return is_sha256_hex(sha) ? sha : "";
}

void FileDigests::write_cache(const std::string& path, const std::vector<std::string>& parts,
                              const std::string& sha256) const {
  if (cache_dir_.empty()) return;
  nlohmann::json j = {{"path", path}, {"sha256", sha256}, {"parts", nlohmann::json::array()}};
  uint64_t total = 0;
  for (const std::string& p : parts) {
    FileStamp st;
    if (!stamp_of(p, &st)) return;
    total += st.size;
    j["parts"].push_back({{"path", p}, {"size", st.size}, {"mtime_ns", st.mtime_ns}});
  }
  if (total < min_cached_bytes_) return;
  std::error_code ec;
  fs::create_directories(cache_dir_, ec);
  if (ec) return;  // a cache only: the digest is still known for this run
  const std::string file = cache_file(path);
  const std::string tmp = file + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.dump() << "\n";
    if (!out.flush()) return;
  }
  fs::rename(tmp, file, ec);
}

}  // namespace sniper::server
