// SPDX-License-Identifier: MIT
// HubClient: the two requests `sniper pull` makes to a Hugging Face-compatible hub, over libcurl
// (HTTP/HTTPS, redirects to the CDN, proxies from the environment, Range; nothing hand-written):
// - list_files: GET {endpoint}/api/models/{repo}/tree/main?recursive=true, every page (the Link
//   header's rel="next"), into path / size / LFS sha256;
// - download: GET {endpoint}/{repo}/resolve/main/{file} appended to a ".part" file, resuming
//   with "Range: bytes=N-" from the part's current size, hashing every byte (the existing prefix
//   first) so the caller can compare the SHA-256 with the listing before it renames the part.
// Trust boundary (issue 40 findings 4 and 10): only https is spoken, for requests and redirects
// alike (http too, and only, when HF_ENDPOINT itself is an http:// URL); redirects are followed
// here, hop by hop (at most 10), so that each target is checked before it is contacted.
// HF_TOKEN goes out as "Authorization: Bearer" only to the configured origin (HF_ENDPOINT's
// scheme, host and port): a redirect to another origin (the CDN) is followed without it, and a
// listing whose Link rel="next" leaves the origin is refused. An error answered by another
// origin names that origin and the status, never its body or its full URL (which may hold
// signatures). Hub-provided file names are checked before use (no NUL or control character, no
// backslash, no empty, "." or ".." component, not absolute; sizes below 2^63) and printed
// escaped. Errors name the repository, the URL and the cause (HTTP status with the hub's message,
// or libcurl's transport error); `retryable()` says whether trying again can help (transport
// failures, 5xx, 408/429), which the pull loop uses for its bounded retry.
// Thread-compatible: one client per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "hub/hub_files.h"

namespace sniper::hub {

struct HubConfig {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT, without a trailing '/'
  std::string token;                                // HF_TOKEN, may be empty
  std::string revision = "main";
};

// HF_ENDPOINT and HF_TOKEN through `getenv_fn` (std::getenv when empty). An Error when
// HF_ENDPOINT is not an http:// or https:// URL with a host (and no user, query or fragment).
[[nodiscard]] Result<HubConfig> hub_config_from_env(const std::function<const char*(const char*)>& getenv_fn = {});

// Called from the download loop with the bytes of the file now in the part (resumed prefix
// included) and the file's total size.
using ProgressFn = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

struct DownloadResult {
  uint64_t resumed_from = 0;  // bytes already in the part when this request started
  uint64_t bytes = 0;         // size of the part now (== the file's size on success)
  std::string sha256;         // SHA-256 of the whole part
};

class HubClient {
 public:
  explicit HubClient(HubConfig config);

  // Every file of `repo` at the configured revision. Errors: 404 (no such repository), 401/403
  // (gated or private: says whether HF_TOKEN was set), malformed JSON (names the field).
  [[nodiscard]] Result<std::vector<HubFile>> list_files(const std::string& repo);

  // Downloads `file` of `repo` into `part_path`, resuming from the part's size, until the part
  // holds `total_bytes`. A part larger than total_bytes, or a server that ignores the Range, is
  // restarted from byte 0. Writes through a file descriptor this call owns; ENOSPC is an Error
  // saying the disk is full (the part is kept for a later resume).
  [[nodiscard]] Result<DownloadResult> download(const std::string& repo, const std::string& file,
                                                const std::string& part_path, uint64_t total_bytes,
                                                const ProgressFn& progress);

  // Whether the last failed request may succeed if tried again (and resume).
  bool retryable() const { return retryable_; }
  // HTTP status of the last request's final response, 0 when none arrived.
  long last_http_status() const { return last_status_; }
  const HubConfig& config() const { return config_; }

  // The file URL (for messages): {endpoint}/{repo}/resolve/{revision}/{file}.
  std::string file_url(const std::string& repo, const std::string& file) const;

  struct Exchange;  // one request's state (hub_client.cpp), shared with libcurl's callbacks

 private:
  [[nodiscard]] Status perform(Exchange& ex);
  // One request to one URL (no redirect followed): sets ex's status and redirect target.
  [[nodiscard]] Status perform_once(Exchange& ex, const std::string& url, bool with_token);
  // Checks that `url` uses an allowed scheme (https; http when the endpoint is http).
  [[nodiscard]] Status check_target(const std::string& url, const char* what) const;

  HubConfig config_;
  std::string origin_;  // url_origin(config_.endpoint)
  long last_status_ = 0;
  bool retryable_ = false;
};

// Parses one page of the tree API: [{"type":"file","path":..,"size":..,"lfs":{"oid":..,"size":..}}, ...];
// directories are skipped. Errors name the entry and the field; paths are checked by
// check_hub_path and sizes must be below 2^63.
[[nodiscard]] Result<std::vector<HubFile>> parse_tree_listing(const std::string& json);
// The rel="next" URL of an HTTP Link header, "" when none.
std::string parse_next_link(const std::string& link_header);

// A file path from the hub, safe to join to a local directory: relative, '/'-separated, without
// NUL or control characters, backslashes, or empty, "." or ".." components. The Error shows the
// path escaped (absolute paths are not shown).
[[nodiscard]] Status check_hub_path(const std::string& path);
// `s` with control characters, backslashes and non-UTF-8 bytes as \xNN, cut to max_bytes.
std::string printable(std::string_view s, size_t max_bytes = 200);

// "scheme://host:port" of an absolute URL (default port filled in, host lower-cased), or "" when
// `url` does not parse.
std::string url_origin(const std::string& url);
// The scheme of an absolute URL, lower-cased ("" when it does not parse).
std::string url_scheme(const std::string& url);

}  // namespace sniper::hub
