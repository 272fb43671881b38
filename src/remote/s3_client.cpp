// SPDX-License-Identifier: MIT
#include "remote/s3_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "base/check.h"
#include "remote/curl_common.h"
#include "remote/sha256.h"

namespace sniper {

namespace {

// S3 bounds: one PUT carries at most 5 GiB; error and list replies are small.
constexpr uint64_t kMaxPutBytes = uint64_t{5} << 30;
constexpr size_t kMaxErrorBodyBytes = 64 << 10;
constexpr uint64_t kMaxListReplyBytes = 16 << 20;
constexpr int kMaxListPages = 10000;
// sha256("") for requests without a body (x-amz-content-sha256 must name the payload's hash).
constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string trim_slashes(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

std::string xml_unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    static constexpr std::pair<const char*, char> kEntities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool matched = false;
    for (const auto& [ent, ch] : kEntities) {
      const size_t len = std::strlen(ent);
      if (s.compare(i, len, ent) == 0) {
        out += ch;
        i += len - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out += '&';
  }
  return out;
}

// The text of the first <tag>...</tag> inside `xml` from `from`, or nullopt. *end gets the
// position after the closing tag.
bool xml_element(std::string_view xml, std::string_view tag, size_t from, std::string_view* text, size_t* end) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  const size_t a = xml.find(open, from);
  if (a == std::string_view::npos) return false;
  const size_t b = xml.find(close, a + open.size());
  if (b == std::string_view::npos) return false;
  *text = xml.substr(a + open.size(), b - a - open.size());
  if (end != nullptr) *end = b + close.size();
  return true;
}

}  // namespace

Result<S3Config> s3_config_from_env(const std::function<const char*(const char*)>& getenv_fn) {
  auto env = [&](const char* name) -> std::string {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  S3Config c;
  c.access_key_id = env("AWS_ACCESS_KEY_ID");
  c.secret_access_key = env("AWS_SECRET_ACCESS_KEY");
  c.session_token = env("AWS_SESSION_TOKEN");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return make_error(
        "S3 credentials are missing: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN "
        "for temporary credentials)");
  }
  if (const std::string part = env("SNIPER_S3_PART_BYTES"); !part.empty()) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(part.c_str(), &end, 10);
    if (end == part.c_str() || *end != '\0' || v < (64u << 10) || v > (uint64_t{5} << 30)) {
      return make_error(
          "SNIPER_S3_PART_BYTES is '%s' but must be a byte count in [65536, 5368709120] (S3 needs parts "
          "of at least 5 MiB)",
          part.c_str());
    }
    c.part_bytes = v;
  }
  c.region = env("AWS_REGION");
  if (c.region.empty()) c.region = env("AWS_DEFAULT_REGION");
  if (c.region.empty()) c.region = "us-east-1";
  for (char ch : c.region) {
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-')) {
      return make_error("AWS_REGION is '%s' but a region is made of a-z 0-9 and '-' (e.g. us-east-1, auto)",
                        c.region.c_str());
    }
  }
  std::string endpoint = env("AWS_ENDPOINT_URL_S3");
  const char* endpoint_var = "AWS_ENDPOINT_URL_S3";
  if (endpoint.empty()) {
    endpoint = env("AWS_ENDPOINT_URL");
    endpoint_var = "AWS_ENDPOINT_URL";
  }
  if (endpoint.empty()) {
    c.endpoint = "https://s3." + c.region + ".amazonaws.com";
    c.path_style = false;
    return c;
  }
  endpoint = trim_slashes(endpoint);
  const size_t scheme_end = endpoint.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "" : endpoint.substr(0, scheme_end);
  const std::string host = scheme_end == std::string::npos ? "" : endpoint.substr(scheme_end + 3);
  if ((scheme != "http" && scheme != "https") || host.empty() || host.find_first_of("/?#@ ") != std::string::npos) {
    return make_error("%s is '%s' but must be http(s)://host[:port] with no path (e.g. http://127.0.0.1:9000)",
                      endpoint_var, endpoint.c_str());
  }
  c.endpoint = endpoint;
  c.path_style = true;
  return c;
}

Result<S3Location> parse_s3_url(std::string_view url) {
  constexpr std::string_view kScheme = "s3://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return make_error("remote '%.*s' must be an s3://bucket/prefix URL", static_cast<int>(url.size()), url.data());
  }
  const std::string_view rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  S3Location loc;
  loc.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) loc.prefix = std::string(rest.substr(slash + 1));
  while (!loc.prefix.empty() && loc.prefix.back() == '/') loc.prefix.pop_back();
  const auto bad = [&](const char* why) {
    return make_error("remote '%.*s': %s", static_cast<int>(url.size()), url.data(), why);
  };
  if (loc.bucket.size() < 3 || loc.bucket.size() > 63) return bad("the bucket name must be 3 to 63 characters");
  for (char c : loc.bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
      return bad("a bucket name may only contain a-z 0-9 . -");
    }
  }
  if (loc.prefix.size() > 512) return bad("the prefix is longer than 512 characters");
  if (!loc.prefix.empty() && loc.prefix[0] == '/') return bad("the prefix must not start with '/'");
  if (loc.prefix.find("//") != std::string::npos) return bad("the prefix must not contain an empty segment ('//')");
  for (char c : loc.prefix) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
          c == '_' || c == '/')) {
      return bad("a prefix may only contain A-Z a-z 0-9 . _ - /");
    }
  }
  return loc;
}

Result<std::vector<S3Object>> parse_list_objects_v2(std::string_view xml, std::string* next_token) {
  std::vector<S3Object> out;
  size_t at = 0;
  std::string_view block;
  size_t end = 0;
  while (xml_element(xml, "Contents", at, &block, &end)) {
    at = end;
    S3Object o;
    std::string_view key, size, modified;
    if (!xml_element(block, "Key", 0, &key, nullptr))
      return make_error("a ListObjectsV2 <Contents> entry has no <Key>");
    if (!xml_element(block, "Size", 0, &size, nullptr) || size.empty() || size.size() > 19) {
      return make_error("the ListObjectsV2 entry '%.*s' has no valid <Size>", static_cast<int>(key.size()), key.data());
    }
    for (char c : size) {
      if (c < '0' || c > '9') {
        return make_error("the ListObjectsV2 entry '%.*s' has <Size> '%.*s', not a number",
                          static_cast<int>(key.size()), key.data(), static_cast<int>(size.size()), size.data());
      }
      o.bytes = o.bytes * 10 + static_cast<uint64_t>(c - '0');
    }
    if (xml_element(block, "LastModified", 0, &modified, nullptr)) o.last_modified = xml_unescape(modified);
    o.key = xml_unescape(key);
    out.push_back(std::move(o));
  }
  next_token->clear();
  std::string_view truncated, token;
  if (xml_element(xml, "IsTruncated", 0, &truncated, nullptr) && truncated == "true") {
    if (!xml_element(xml, "NextContinuationToken", 0, &token, nullptr) || token.empty()) {
      return make_error("a truncated ListObjectsV2 reply has no <NextContinuationToken>");
    }
    *next_token = xml_unescape(token);
  }
  return out;
}

void parse_s3_error(std::string_view xml, std::string* code, std::string* message) {
  std::string_view v;
  *code = xml_element(xml, "Code", 0, &v, nullptr) ? xml_unescape(v) : "";
  *message = xml_element(xml, "Message", 0, &v, nullptr) ? xml_unescape(v) : "";
}

// One HTTP exchange: what to send and where the body goes.
struct S3Client::Request {
  const char* op = "";  // "upload", "download", ... (for messages)
  std::string method = "GET";
  std::string url;
  std::string display;  // s3://bucket/key
  std::string payload_sha256 = kEmptySha256;
  std::vector<std::string> headers;
  std::string* etag = nullptr;  // receives the reply's ETag header when set
  // Upload source: a file descriptor or bytes.
  int upload_fd = -1;
  uint64_t upload_offset = 0;  // of the range of upload_fd sent
  std::string_view upload_bytes;
  uint64_t upload_size = 0;
  uint64_t upload_pos = 0;
  bool upload = false;
  // Download sink: a file descriptor (hashed) or a string, both capped.
  int sink_fd = -1;
  std::string* sink_string = nullptr;
  uint64_t max_bytes = 0;
  uint64_t received = 0;
  Sha256* sink_hash = nullptr;
  std::string sink_error;  // why the sink stopped the transfer
  std::string error_body;  // the body of a non-2xx reply
  CURL* curl = nullptr;
};

namespace {

size_t on_write(char* data, size_t size, size_t nmemb, void* user) {
  auto* r = static_cast<S3Client::Request*>(user);
  const size_t n = size * nmemb;
  long status = 0;
  curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300) {
    const size_t keep = std::min(n, kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, r->error_body.size()));
    r->error_body.append(data, keep);
    return n;
  }
  if (r->received + n > r->max_bytes) {
    r->sink_error = "the object is larger than the " + std::to_string(r->max_bytes) + " bytes expected";
    return 0;
  }
  if (r->sink_string != nullptr) {
    r->sink_string->append(data, n);
  } else if (r->sink_fd >= 0) {
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::write(r->sink_fd, data + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        r->sink_error = std::string("cannot write the download: ") + std::strerror(errno);
        return 0;
      }
      done += static_cast<size_t>(w);
    }
    if (r->sink_hash != nullptr) r->sink_hash->update(data, n);
  }
  r->received += n;
  return n;
}

size_t on_read(char* buf, size_t size, size_t nitems, void* user) {
  auto* r = static_cast<S3Client::Request*>(user);
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size * nitems, r->upload_size - r->upload_pos));
  if (want == 0) return 0;
  if (r->upload_fd < 0) {
    std::memcpy(buf, r->upload_bytes.data() + r->upload_pos, want);
    r->upload_pos += want;
    return want;
  }
  for (;;) {
    const ssize_t n = ::pread(r->upload_fd, buf, want, static_cast<off_t>(r->upload_offset + r->upload_pos));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r->sink_error =
          n == 0 ? "the file shrank during the upload" : std::string("cannot read the file: ") + std::strerror(errno);
      return CURL_READFUNC_ABORT;
    }
    r->upload_pos += static_cast<uint64_t>(n);
    return static_cast<size_t>(n);
  }
}

size_t on_header(char* data, size_t size, size_t nitems, void* user) {
  auto* r = static_cast<S3Client::Request*>(user);
  const size_t n = size * nitems;
  std::string_view line(data, n);
  if (r->etag != nullptr && line.size() > 5 && (line[0] == 'E' || line[0] == 'e') && line.find(':') == 4) {
    std::string name(line.substr(0, 4));
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (name == "etag") {
      std::string_view v = line.substr(5);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
      *r->etag = std::string(v);
    }
  }
  return n;
}

int on_seek(void* user, curl_off_t offset, int origin) {
  auto* r = static_cast<S3Client::Request*>(user);
  if (origin != SEEK_SET || offset < 0 || static_cast<uint64_t>(offset) > r->upload_size) return CURL_SEEKFUNC_CANTSEEK;
  r->upload_pos = static_cast<uint64_t>(offset);
  return CURL_SEEKFUNC_OK;
}

}  // namespace

S3Client::S3Client(S3Config config) : config_(std::move(config)) { init_curl_once(); }

std::string S3Client::object_url(const std::string& bucket, const std::string& key, const std::string& query) const {
  std::string url;
  // A dotted bucket name does not match the endpoint's TLS wildcard, so it is addressed path style.
  if (config_.path_style || bucket.find('.') != std::string::npos) {
    url = config_.endpoint + "/" + bucket + "/" + key;
  } else {
    const size_t scheme_end = config_.endpoint.find("://");
    url =
        config_.endpoint.substr(0, scheme_end + 3) + bucket + "." + config_.endpoint.substr(scheme_end + 3) + "/" + key;
  }
  if (!query.empty()) url += "?" + query;
  return url;
}

Status S3Client::perform(Request& req) {
  last_status_ = 0;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return make_error("%s %s: curl_easy_init failed", req.op, req.display.c_str());
  req.curl = curl;
  char errbuf[CURL_ERROR_SIZE] = {0};
  const std::string sigv4 = "aws:amz:" + config_.region + ":s3";
  curl_slist* headers = nullptr;
  std::vector<std::string> lines = req.headers;
  lines.push_back("x-amz-content-sha256: " + req.payload_sha256);
  if (!config_.session_token.empty()) lines.push_back("x-amz-security-token: " + config_.session_token);
  for (const std::string& h : lines) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(curl, CURLOPT_USERNAME, config_.access_key_id.c_str());
  curl_easy_setopt(curl, CURLOPT_PASSWORD, config_.secret_access_key.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 15L);
  // A stalled transfer (no byte for 60 s) fails instead of hanging.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &req);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &req);
  if (req.upload) {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    // PUT by default; POST for the multipart calls that carry a body (curl still streams it).
    if (req.method != "PUT") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(curl, CURLOPT_READDATA, &req);
    curl_easy_setopt(curl, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(curl, CURLOPT_SEEKDATA, &req);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.upload_size));
  } else if (req.method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  req.curl = nullptr;
  last_status_ = status;
  if (rc != CURLE_OK && !req.sink_error.empty()) {
    return make_error("%s %s failed: %s", req.op, req.display.c_str(), req.sink_error.c_str());
  }
  if (rc != CURLE_OK) {
    last_status_ = 0;
    return make_error("%s %s failed: cannot complete the request to %s: %s%s%s", req.op, req.display.c_str(),
                      config_.endpoint.c_str(), curl_easy_strerror(rc), errbuf[0] != '\0' ? ": " : "", errbuf);
  }
  if (status < 200 || status >= 300) {
    std::string code, message;
    parse_s3_error(req.error_body, &code, &message);
    std::string hint;
    if (status == 403) hint = " (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's permissions)";
    if (status == 301 || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed") {
      hint = " (check AWS_REGION and AWS_ENDPOINT_URL)";
    }
    return make_error("%s %s failed: S3 answered HTTP %ld%s%s%s%s%s", req.op, req.display.c_str(), status,
                      code.empty() ? "" : " ", code.c_str(), message.empty() ? "" : ": ", message.c_str(),
                      hint.c_str());
  }
  return ok_status();
}

Status S3Client::put_file(const std::string& bucket, const std::string& key, const std::string& path,
                          const std::string& content_sha256, const std::map<std::string, std::string>& meta) {
  CHECK(is_sha256_hex(content_sha256), "put_file needs a hex sha256");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error("cannot open '%s' to upload it: %s", path.c_str(), std::strerror(errno));
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0) {
    ::close(fd);
    return make_error("cannot seek in '%s'", path.c_str());
  }
  std::vector<std::string> meta_headers = {"Content-Type: application/octet-stream"};
  for (const auto& [k, v] : meta) meta_headers.push_back("x-amz-meta-" + k + ": " + v);
  if (static_cast<uint64_t>(size) > std::min(config_.part_bytes, kMaxPutBytes)) {
    Status st = put_multipart(bucket, key, fd, static_cast<uint64_t>(size), meta_headers);
    ::close(fd);
    return st;
  }
  Request req;
  req.op = "upload to";
  req.method = "PUT";
  req.url = object_url(bucket, key, "");
  req.display = "s3://" + bucket + "/" + key;
  req.payload_sha256 = content_sha256;
  req.headers = meta_headers;
  req.upload = true;
  req.upload_fd = fd;
  req.upload_size = static_cast<uint64_t>(size);
  Status st = perform(req);
  ::close(fd);
  return st;
}

Status S3Client::put_multipart(const std::string& bucket, const std::string& key, int fd, uint64_t size,
                               const std::vector<std::string>& meta_headers) {
  constexpr uint64_t kMaxParts = 10000;
  const uint64_t part = std::max(config_.part_bytes, (size + kMaxParts - 1) / kMaxParts);
  if (part > kMaxPutBytes)
    return make_error("s3://%s/%s: %" PRIu64 " bytes is past S3's object size limit", bucket.c_str(), key.c_str(),
                      size);
  const std::string display = "s3://" + bucket + "/" + key;
  // CreateMultipartUpload: the metadata goes here; the reply names the upload.
  std::string reply;
  {
    Request req;
    req.op = "multipart upload to";
    req.method = "POST";
    req.url = object_url(bucket, key, "uploads=");
    req.display = display;
    req.headers = meta_headers;
    req.upload = true;
    req.sink_string = &reply;
    req.max_bytes = kMaxErrorBodyBytes;
    SNIPER_TRY(perform(req));
  }
  std::string_view id_view;
  if (!xml_element(reply, "UploadId", 0, &id_view, nullptr) || id_view.empty()) {
    return make_error("multipart upload to %s: the reply to CreateMultipartUpload has no <UploadId>", display.c_str());
  }
  const std::string upload_id = xml_unescape(id_view);
  const std::string id_query = "uploadId=" + percent_encode(upload_id, /*keep_slash=*/false);
  std::string complete = "<CompleteMultipartUpload>";
  Status st = ok_status();
  std::vector<char> buf;
  for (uint64_t offset = 0, number = 1; offset < size && st.ok(); offset += part, ++number) {
    const uint64_t n = std::min(part, size - offset);
    // Each part carries its own SHA-256 (S3 checks it): one read to hash, one to send.
    Sha256 hash;
    buf.resize(static_cast<size_t>(std::min<uint64_t>(n, uint64_t{1} << 20)));
    for (uint64_t done = 0; done < n;) {
      const ssize_t r = ::pread(fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), n - done)),
                                static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        st = make_error("multipart upload to %s: cannot read the file at offset %" PRIu64, display.c_str(),
                        offset + done);
        break;
      }
      hash.update(buf.data(), static_cast<size_t>(r));
      done += static_cast<uint64_t>(r);
    }
    if (!st.ok()) break;
    std::string etag;
    Request req;
    req.op = "multipart upload to";
    req.method = "PUT";
    // Query parameters sorted (SigV4's canonical query string): partNumber < uploadId.
    req.url = object_url(bucket, key, "partNumber=" + std::to_string(number) + "&" + id_query);
    req.display = display + " (part " + std::to_string(number) + ")";
    req.payload_sha256 = hash.hex_digest();
    req.upload = true;
    req.upload_fd = fd;
    req.upload_offset = offset;
    req.upload_size = n;
    req.etag = &etag;
    st = perform(req);
    if (st.ok() && etag.empty())
      st = make_error("multipart upload to %s: part %" PRIu64 " got no ETag", display.c_str(), number);
    complete += "<Part><PartNumber>" + std::to_string(number) + "</PartNumber><ETag>" + etag + "</ETag></Part>";
  }
  complete += "</CompleteMultipartUpload>";
  if (st.ok()) {
    reply.clear();
    Request req;
    req.op = "multipart upload to";
    req.method = "POST";
    req.url = object_url(bucket, key, id_query);
    req.display = display;
    req.payload_sha256 = sha256_hex(complete.data(), complete.size());
    req.headers.push_back("Content-Type: application/xml");
    req.upload = true;
    req.upload_bytes = complete;
    req.upload_size = complete.size();
    req.sink_string = &reply;
    req.max_bytes = kMaxErrorBodyBytes;
    st = perform(req);
    // CompleteMultipartUpload can fail after its 200 status line: the body is then an <Error>.
    if (st.ok() && reply.find("<Error>") != std::string::npos) {
      std::string code, message;
      parse_s3_error(reply, &code, &message);
      st = make_error("multipart upload to %s failed at completion: %s: %s", display.c_str(), code.c_str(),
                      message.c_str());
    }
  }
  if (!st.ok()) {
    // Best effort: free the parts (an incomplete upload is never an object either way).
    const long status = last_status_;
    Request req;
    req.op = "abort of";
    req.method = "DELETE";
    req.url = object_url(bucket, key, id_query);
    req.display = display;
    (void)perform(req);
    last_status_ = status;
  }
  return st;
}

Status S3Client::put_bytes(const std::string& bucket, const std::string& key, std::string_view bytes,
                           const std::string& content_type) {
  Request req;
  req.op = "upload to";
  req.method = "PUT";
  req.url = object_url(bucket, key, "");
  req.display = "s3://" + bucket + "/" + key;
  req.payload_sha256 = sha256_hex(bytes.data(), bytes.size());
  req.headers.push_back("Content-Type: " + content_type);
  req.upload = true;
  req.upload_bytes = bytes;
  req.upload_size = bytes.size();
  return perform(req);
}

Status S3Client::get_to_fd(const std::string& bucket, const std::string& key, int fd, uint64_t max_bytes,
                           uint64_t* n_bytes, std::string* sha256) {
  Sha256 hash;
  Request req;
  req.op = "download of";
  req.url = object_url(bucket, key, "");
  req.display = "s3://" + bucket + "/" + key;
  req.sink_fd = fd;
  req.sink_hash = &hash;
  req.max_bytes = max_bytes;
  SNIPER_TRY(perform(req));
  *n_bytes = req.received;
  *sha256 = hash.hex_digest();
  return ok_status();
}

Result<std::string> S3Client::get_bytes(const std::string& bucket, const std::string& key, uint64_t max_bytes) {
  std::string out;
  Request req;
  req.op = "download of";
  req.url = object_url(bucket, key, "");
  req.display = "s3://" + bucket + "/" + key;
  req.sink_string = &out;
  req.max_bytes = max_bytes;
  SNIPER_TRY(perform(req));
  return out;
}

Status S3Client::remove(const std::string& bucket, const std::string& key) {
  Request req;
  req.op = "delete of";
  req.method = "DELETE";
  req.url = object_url(bucket, key, "");
  req.display = "s3://" + bucket + "/" + key;
  return perform(req);
}

Result<std::vector<S3Object>> S3Client::list(const std::string& bucket, const std::string& prefix) {
  std::vector<S3Object> all;
  std::string token;
  for (int page = 0; page < kMaxListPages; ++page) {
    // Query parameters in sorted order, values encoded: SigV4's canonical query string.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + percent_encode(token, /*keep_slash=*/false) + "&";
    query += "list-type=2&prefix=" + percent_encode(prefix, /*keep_slash=*/false);
    std::string body;
    Request req;
    req.op = "listing of";
    req.url = object_url(bucket, "", query);
    req.display = "s3://" + bucket + "/" + prefix;
    req.sink_string = &body;
    req.max_bytes = kMaxListReplyBytes;
    SNIPER_TRY(perform(req));
    auto objects = parse_list_objects_v2(body, &token);
    if (!objects.ok())
      return make_error("listing of s3://%s/%s: %s", bucket.c_str(), prefix.c_str(), objects.error().message.c_str());
    all.insert(all.end(), objects->begin(), objects->end());
    if (token.empty()) return all;
  }
  return make_error("listing of s3://%s/%s has more than %d pages", bucket.c_str(), prefix.c_str(), kMaxListPages);
}

}  // namespace sniper
