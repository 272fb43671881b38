// SPDX-License-Identifier: MIT
// What the Ollama API reports about a model file: its quantization level as llama.cpp names the
// file type ("Q4_K_M", from general.file_type; the type holding most of the weight bytes when
// the file has no such key, as Ollama falls back), and its digest, the SHA-256 of the file (all
// parts of a split model, in order, as one byte stream).
// Digests are computed once per file by one background thread (a 20 GB file takes seconds to
// minutes) and cached on disk by path, size and modification time, so a restart does not hash
// again; until one is known, digest() answers "" and the route reports it empty.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gguf/reader.h"

namespace sniper::server {

// llama.cpp's name of a general.file_type value (LLAMA_FTYPE_*): 15 -> "Q4_K_M"; "" if unknown.
std::string file_type_name(int64_t file_type);
// general.file_type's name, else the ggml type holding most bytes of the 2-D tensors ("Q4_K"),
// else "unknown".
std::string quantization_level(const GgufFile& gguf);

// The files of a model: `path` alone, or every part of a split set named like it
// ("X-00001-of-00003.gguf" -> the three parts), in order.
std::vector<std::string> model_part_paths(const std::string& path);

class FileDigests {
 public:
  // `cache_dir`: where digests are kept between runs (created when first written; "" keeps none).
  // Only models of at least `min_cached_bytes` are written there: hashing a smaller one again
  // costs nothing, and test runs would otherwise leave an entry per temporary file.
  explicit FileDigests(std::string cache_dir, uint64_t min_cached_bytes = kMinCachedBytes);
  static constexpr uint64_t kMinCachedBytes = uint64_t{64} << 20;
  ~FileDigests();  // stops the worker; a hash in progress is abandoned
  FileDigests(const FileDigests&) = delete;
  FileDigests& operator=(const FileDigests&) = delete;

  // The 64-hex-digit SHA-256 of the model at `path` (model_part_paths), or "" while it is being
  // computed or when it cannot be read; the first call for a model queues its hash.
  std::string digest(const std::string& path);
  // $XDG_CACHE_HOME/sniper/digests, else ~/.cache/sniper/digests.
  static std::string default_dir();

 private:
  struct Known {
    std::string sha256;  // "" while pending or failed
    bool pending = false;
  };
  void run();
  std::string cache_file(const std::string& path) const;
  // The cached digest of `paths` when the sizes and times recorded with it still hold; else "".
  std::string read_cache(const std::string& path, const std::vector<std::string>& parts) const;
  void write_cache(const std::string& path, const std::vector<std::string>& parts, const std::string& sha256) const;

  std::string cache_dir_;
  uint64_t min_cached_bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Known> known_;  // by model path
  std::deque<std::string> queue_;
  bool stopping_ = false;
  std::atomic<bool> stop_{false};  // ends a hash in progress
  std::thread worker_;
};

}  // namespace sniper::server
