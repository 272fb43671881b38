// SPDX-License-Identifier: MIT
// S3Client: the few S3 object operations context sync needs (PUT from a file or bytes, GET to a
// file or bytes, DELETE, ListObjectsV2), over libcurl. libcurl signs every request with AWS
// Signature V4 (CURLOPT_AWS_SIGV4) and does HTTP, TLS, proxies and redirects; nothing here
// implements a protocol by hand. The endpoint and credentials come from the standard AWS_*
// environment variables (s3_config_from_env). AWS's own endpoint is addressed virtual-host
// style; a custom endpoint (MinIO, R2, s3rver: AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL) path
// style, http://host:port/bucket/key.
// Errors: every failure is an Error naming the operation, the s3:// URL and the cause: S3's
// error code and message for an HTTP error (403 InvalidAccessKeyId, 404 NoSuchKey, ...), libcurl's
// message for a transport failure (unreachable endpoint, connection cut midway). last_http_status()
// tells them apart (0 = no HTTP response). Thread-compatible: one client per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sniper {

struct S3Config {
  std::string endpoint;           // "https://s3.us-east-1.amazonaws.com" or a custom "http://127.0.0.1:9000"
  bool path_style = false;        // true for custom endpoints
  std::string region;             // AWS_REGION / AWS_DEFAULT_REGION, default "us-east-1"
  std::string access_key_id;      // AWS_ACCESS_KEY_ID
  std::string secret_access_key;  // AWS_SECRET_ACCESS_KEY
  std::string session_token;      // AWS_SESSION_TOKEN, may be empty
  // Files larger than this go up as a multipart upload in parts of this size (SNIPER_S3_PART_BYTES;
  // S3 needs at least 5 MiB per part but the last, and at most 10,000 parts: larger files get
  // larger parts).
  uint64_t part_bytes = uint64_t{64} << 20;
};

// Reads the AWS_* variables through `getenv_fn` (std::getenv by default). Errors name the missing
// credential variable or the malformed endpoint.
[[nodiscard]] Result<S3Config> s3_config_from_env(const std::function<const char*(const char*)>& getenv_fn = {});

// "s3://bucket/some/prefix" split into bucket and prefix (no leading or trailing '/', may be
// empty). Bucket names follow S3's rules ([a-z0-9.-]{3,63}); a prefix is restricted to
// [A-Za-z0-9._-/] so that keys need no escaping. Errors name the URL and the rule broken.
struct S3Location {
  std::string bucket;
  std::string prefix;
  // "prefix/name" (or "name" without a prefix).
  std::string key(const std::string& name) const { return prefix.empty() ? name : prefix + "/" + name; }
  std::string url(const std::string& name) const { return "s3://" + bucket + "/" + key(name); }
};
[[nodiscard]] Result<S3Location> parse_s3_url(std::string_view url);

struct S3Object {
  std::string key;
  uint64_t bytes = 0;
  std::string last_modified;  // ISO 8601 as S3 reports it
};

// Parses a ListObjectsV2 reply: the objects, and the continuation token when IsTruncated (else "").
// Errors name the malformed element.
[[nodiscard]] Result<std::vector<S3Object>> parse_list_objects_v2(std::string_view xml, std::string* next_token);
// Extracts <Code> and <Message> from an S3 error body ("" when absent).
void parse_s3_error(std::string_view xml, std::string* code, std::string* message);

class S3Client {
 public:
  explicit S3Client(S3Config config);

  // Uploads the file at `path` with user metadata `meta` (sent as x-amz-meta-<key>): one PUT
  // carrying `content_sha256` (hex of the file's SHA-256; S3 checks the body against it) up to
  // config.part_bytes, else a multipart upload (each part with its own SHA-256, completed only
  // when every part is in; aborted on failure). Either way an interrupted upload leaves no object.
  [[nodiscard]] Status put_file(const std::string& bucket, const std::string& key, const std::string& path,
                                const std::string& content_sha256, const std::map<std::string, std::string>& meta);
  [[nodiscard]] Status put_bytes(const std::string& bucket, const std::string& key, std::string_view bytes,
                                 const std::string& content_type);
  // Downloads into the open file `fd` (from its current offset), refusing more than max_bytes.
  // On success *n_bytes and *sha256 describe what was written. The caller owns fd.
  [[nodiscard]] Status get_to_fd(const std::string& bucket, const std::string& key, int fd, uint64_t max_bytes,
                                 uint64_t* n_bytes, std::string* sha256);
  [[nodiscard]] Result<std::string> get_bytes(const std::string& bucket, const std::string& key, uint64_t max_bytes);
  // Succeeds when the object is gone (S3 answers 204 whether or not it existed).
  [[nodiscard]] Status remove(const std::string& bucket, const std::string& key);
  // Every object whose key starts with `prefix`, all pages.
  [[nodiscard]] Result<std::vector<S3Object>> list(const std::string& bucket, const std::string& prefix);

  // The HTTP status of the last request, 0 when it got no HTTP response (transport failure).
  long last_http_status() const { return last_status_; }

  struct Request;  // one exchange's state (s3_client.cpp), shared with libcurl's callbacks

 private:
  [[nodiscard]] Status perform(Request& req);
  [[nodiscard]] Status put_multipart(const std::string& bucket, const std::string& key, int fd, uint64_t size,
                                     const std::vector<std::string>& meta_headers);
  std::string object_url(const std::string& bucket, const std::string& key, const std::string& query) const;

  S3Config config_;
  long last_status_ = 0;
};

}  // namespace sniper
