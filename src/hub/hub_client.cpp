// SPDX-License-Identifier: MIT
#include "hub/hub_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/check.h"
#include "remote/curl_common.h"
#include "remote/sha256.h"

namespace sniper::hub {

namespace {

constexpr size_t kMaxBodyBytes = size_t{64} << 20;  // a tree listing page is far smaller
constexpr size_t kMaxErrorBodyBytes = 4096;
constexpr size_t kHashChunkBytes = size_t{4} << 20;

std::string trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
  return std::string(v);
}

// The hub's error text from a JSON {"error": "..."} body, else the body's start.
std::string hub_message(const std::string& body) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  std::string s = body.substr(0, 200);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// A URL part through libcurl's parser ("" when absent or when the URL does not parse).
std::string url_part(const std::string& url, CURLUPart part, unsigned flags) {
  CURLU* h = curl_url();
  if (h == nullptr) return "";
  std::string out;
  char* value = nullptr;
  if (curl_url_set(h, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK &&
      curl_url_get(h, part, &value, flags) == CURLUE_OK) {
    out = value;
  }
  curl_free(value);
  curl_url_cleanup(h);
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string printable(std::string_view s, size_t max_bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    if (c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

Status check_hub_path(const std::string& path) {
  if (path.empty()) return make_error("the hub lists a file with an empty path");
  if (path.front() == '/') return make_error("the hub lists a file with an absolute path; refused");
  for (unsigned char c : path) {
    if (c < 0x20 || c == 0x7f) {
      return make_error("the hub lists a file name with control character 0x%02x ('%s'); refused", c,
                        printable(path).c_str());
    }
    if (c == '\\')
      return make_error("the hub lists a file name with a backslash ('%s'); refused", printable(path).c_str());
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view part(path.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return make_error("the hub lists a file path with an empty, '.' or '..' component ('%s'); refused",
                        printable(path).c_str());
    }
    start = end + 1;
  }
  return ok_status();
}

std::string url_scheme(const std::string& url) { return lower(url_part(url, CURLUPART_SCHEME, 0)); }

std::string url_origin(const std::string& url) {
  const std::string scheme = url_scheme(url);
  const std::string host = lower(url_part(url, CURLUPART_HOST, 0));
  const std::string port = url_part(url, CURLUPART_PORT, CURLU_DEFAULT_PORT);
  if (scheme.empty() || host.empty()) return "";
  return scheme + "://" + host + ":" + port;
}

struct HubClient::Exchange {
  std::string url;
  std::string what;  // "list the files of owner/name", for messages
  // Body sink: a string (listing) or a file descriptor (download).
  std::string* body = nullptr;
  int fd = -1;
  std::unique_ptr<Sha256>* hash = nullptr;  // replaced when the download restarts from 0
  uint64_t offset = 0;                      // bytes the part held when the request was sent (Range start)
  uint64_t written = 0;                     // bytes appended to the part by this request
  uint64_t total_bytes = 0;                 // expected file size (download)
  bool restart = false;                     // the server ignored the Range: the part was truncated to 0
  const ProgressFn* progress = nullptr;
  std::string error_body;
  std::string sink_error;
  int sink_errno = 0;
  std::string link_header;
  std::string content_range;
  CURL* curl = nullptr;
  // The response in hand: its status, where it redirects to, and the origin that answered.
  long status = 0;
  std::string redirect;
  std::string answered_by;
};

namespace {

long status_of(CURL* curl) {
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

size_t on_header(char* data, size_t size, size_t nitems, void* user) {
  auto* ex = static_cast<HubClient::Exchange*>(user);
  const size_t n = size * nitems;
  std::string_view line(data, n);
  if (line.size() >= 5 && line.substr(0, 5) == "HTTP/") {
    ex->link_header.clear();  // a new response (after a redirect): forget the previous one's headers
    ex->content_range.clear();
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name(line.substr(0, colon));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name == "link") ex->link_header = trim(line.substr(colon + 1));
  if (name == "content-range") ex->content_range = trim(line.substr(colon + 1));
  return n;
}

size_t on_write(char* data, size_t size, size_t nmemb, void* user) {
  auto* ex = static_cast<HubClient::Exchange*>(user);
  const size_t n = size * nmemb;
  const long status = status_of(ex->curl);
  if (status < 200 || status >= 300) {
    const size_t room = kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, ex->error_body.size());
    ex->error_body.append(data, std::min(n, room));
    return n;
  }
  if (ex->body != nullptr) {
    if (ex->body->size() + n > kMaxBodyBytes) {
      ex->sink_error = "the reply is larger than " + std::to_string(kMaxBodyBytes) + " bytes";
      return 0;
    }
    ex->body->append(data, n);
    return n;
  }
  if (ex->written == 0 && ex->offset > 0) {
    if (status == 200) {
      // The server sent the whole file: start the part over.
      if (::ftruncate(ex->fd, 0) != 0 || ::lseek(ex->fd, 0, SEEK_SET) != 0) {
        ex->sink_error = std::string("cannot truncate the part: ") + std::strerror(errno);
        return 0;
      }
      *ex->hash = std::make_unique<Sha256>();
      ex->offset = 0;
      ex->restart = true;
    } else if (ex->content_range.rfind("bytes " + std::to_string(ex->offset) + "-", 0) != 0) {
      ex->sink_error = "the server answered the range request from byte " + std::to_string(ex->offset) +
                       " with Content-Range '" + ex->content_range + "'";
      return 0;
    }
  }
  if (n > ex->total_bytes - (ex->offset + ex->written)) {  // offset + written <= total_bytes
    ex->sink_error = "the server sent more than the " + std::to_string(ex->total_bytes) + " bytes the listing gives";
    return 0;
  }
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(ex->fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      ex->sink_errno = w < 0 ? errno : ENOSPC;
      ex->sink_error =
          ex->sink_errno == ENOSPC ? "the disk is full" : std::string("cannot write: ") + std::strerror(errno);
      return 0;
    }
    done += static_cast<size_t>(w);
  }
  (*ex->hash)->update(data, n);
  ex->written += n;
  if (ex->progress != nullptr && *ex->progress) (*ex->progress)(ex->offset + ex->written, ex->total_bytes);
  return n;
}

}  // namespace

Result<HubConfig> hub_config_from_env(const std::function<const char*(const char*)>& getenv_fn) {
  auto env = [&](const char* name) -> std::string {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  HubConfig c;
  if (std::string e = env("HF_ENDPOINT"); !e.empty()) {
    init_curl_once();
    const std::string scheme = url_scheme(e);
    if ((scheme != "http" && scheme != "https") || (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0)) {
      return make_error("HF_ENDPOINT is '%s' but must be an http:// or https:// URL", printable(e).c_str());
    }
    if (url_origin(e).empty()) return make_error("HF_ENDPOINT is '%s' but has no host", printable(e).c_str());
    if (!url_part(e, CURLUPART_USER, 0).empty() || !url_part(e, CURLUPART_QUERY, 0).empty() ||
        !url_part(e, CURLUPART_FRAGMENT, 0).empty()) {
      return make_error("HF_ENDPOINT is '%s' but must not hold a user, a query or a fragment", printable(e).c_str());
    }
    while (!e.empty() && e.back() == '/') e.pop_back();
    c.endpoint = e;
  }
  c.token = env("HF_TOKEN");
  return c;
}

HubClient::HubClient(HubConfig config) : config_(std::move(config)) {
  init_curl_once();
  origin_ = url_origin(config_.endpoint);
}

Status HubClient::check_target(const std::string& url, const char* what) const {
  const std::string scheme = url_scheme(url);
  const bool allowed = scheme == "https" || (scheme == "http" && url_scheme(config_.endpoint) == "http");
  if (!allowed) {
    return make_error("%s points to a %s URL; only https%s is allowed (the target was not contacted)", what,
                      scheme.empty() ? "malformed" : ("'" + printable(scheme, 20) + "'").c_str(),
                      url_scheme(config_.endpoint) == "http" ? " and http (HF_ENDPOINT is http)" : "");
  }
  return ok_status();
}

std::string HubClient::file_url(const std::string& repo, const std::string& file) const {
  return config_.endpoint + "/" + repo + "/resolve/" + config_.revision + "/" +
         percent_encode(file, /*keep_slash=*/true);
}

Status HubClient::perform_once(Exchange& ex, const std::string& url, bool with_token) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return make_error("%s: curl_easy_init failed", ex.what.c_str());
  ex.curl = curl;
  ex.status = 0;
  ex.redirect.clear();
  ex.error_body.clear();
  ex.link_header.clear();
  ex.content_range.clear();
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = nullptr;
  if (with_token && !config_.token.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + config_.token).c_str());
  }
  std::string range;
  if (ex.fd >= 0 && ex.offset > 0) range = std::to_string(ex.offset) + "-";
  const char* protocols = url_scheme(config_.endpoint) == "http" ? "http,https" : "https";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, protocols);
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);  // followed hop by hop in perform()
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "sniper/1 (hub pull)");
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 30L);
  // A stalled transfer (under 1 byte/s for 60 s) is a transport failure, retried with a resume.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &ex);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ex);
  if (!range.empty()) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(curl);
  ex.status = status_of(curl);
  last_status_ = ex.status;
  char* redirect = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK && redirect != nullptr) {
    ex.redirect = redirect;
  }
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  ex.curl = nullptr;
  ex.answered_by = url_origin(url);
  if (rc != CURLE_OK && !ex.sink_error.empty()) {
    retryable_ = false;
    return make_error("%s: %s", ex.what.c_str(), ex.sink_error.c_str());
  }
  if (rc != CURLE_OK) {
    retryable_ = rc != CURLE_UNSUPPORTED_PROTOCOL;
    const std::string shown = ex.answered_by == origin_ ? url : ex.answered_by;
    return make_error("%s: %s (%s%s%s)", ex.what.c_str(), shown.c_str(), curl_easy_strerror(rc), errbuf[0] ? ": " : "",
                      errbuf);
  }
  return ok_status();
}

Status HubClient::perform(Exchange& ex) {
  last_status_ = 0;
  retryable_ = false;
  std::string url = ex.url;
  SNIPER_TRY(check_target(url, ("the URL for " + ex.what).c_str()));
  constexpr int kMaxRedirects = 10;
  for (int hop = 0;; ++hop) {
    // The token goes only to the configured origin.
    const bool same_origin = url_origin(url) == origin_;
    SNIPER_TRY(perform_once(ex, url, same_origin));
    if (!is_redirect(ex.status) || ex.redirect.empty()) break;
    if (hop >= kMaxRedirects) {
      return make_error("%s: more than %d redirects, starting at %s", ex.what.c_str(), kMaxRedirects, ex.url.c_str());
    }
    SNIPER_TRY(check_target(ex.redirect, ("a redirect while " + ex.what).c_str()));
    url = ex.redirect;
  }
  const long s = ex.status;
  if (s >= 200 && s < 300) return ok_status();
  retryable_ = s >= 500 || s == 408 || s == 429;
  // The body of an error from another origin (a CDN, or wherever a redirect led) is not shown,
  // nor its URL: the origin and the status say enough.
  const bool from_hub = ex.answered_by == origin_;
  const std::string msg = from_hub ? hub_message(ex.error_body) : "";
  const std::string detail = msg.empty() ? "" : " (" + printable(msg) + ")";
  const std::string where = from_hub ? url : ex.answered_by + " (redirected there from " + ex.url + ")";
  if (s == 401 || s == 403) {
    return make_error("%s: HTTP %ld%s from %s: the repository is gated or private, or does not exist; %s",
                      ex.what.c_str(), s, detail.c_str(), from_hub ? origin_.c_str() : where.c_str(),
                      config_.token.empty() ? "HF_TOKEN is not set: set it to a token that can read the repository"
                                            : "HF_TOKEN was sent but the hub refused it: check the token and that it "
                                              "has access to the repository");
  }
  if (s == 404) return make_error("%s: HTTP 404 Not Found at %s%s", ex.what.c_str(), where.c_str(), detail.c_str());
  return make_error("%s: HTTP %ld at %s%s", ex.what.c_str(), s, where.c_str(), detail.c_str());
}

Result<std::vector<HubFile>> HubClient::list_files(const std::string& repo) {
  std::vector<HubFile> out;
  std::string url = config_.endpoint + "/api/models/" + repo + "/tree/" + config_.revision + "?recursive=true";
  for (int page = 0; !url.empty(); ++page) {
    if (page > 10000) return make_error("listing %s: more than 10000 pages", repo.c_str());
    std::string body;
    Exchange ex;
    ex.url = url;
    ex.what = "listing the files of " + repo;
    ex.body = &body;
    Status st = perform(ex);
    if (!st.ok()) {
      if (last_status_ == 404) {
        return make_error("repository %s not found on %s (HTTP 404); check the name (OWNER/NAME)", repo.c_str(),
                          config_.endpoint.c_str());
      }
      return st.error();
    }
    auto files = parse_tree_listing(body);
    if (!files.ok()) return make_error("listing %s: %s", repo.c_str(), files.error().message.c_str());
    for (HubFile& f : *files) out.push_back(std::move(f));
    url = parse_next_link(ex.link_header);
    if (!url.empty()) {
      SNIPER_TRY(check_target(url, ("the listing of " + repo + " (its Link: rel=\"next\")").c_str()));
      // The next page must come from the same hub: the token goes there, and a page from
      // elsewhere could list anything.
      if (url_origin(url) != origin_) {
        return make_error(
            "listing %s: the hub's next page is on another origin (%s, not %s); refused (the target was not "
            "contacted)",
            repo.c_str(), printable(url_origin(url)).c_str(), origin_.c_str());
      }
    }
  }
  return out;
}

Result<DownloadResult> HubClient::download(const std::string& repo, const std::string& file,
                                           const std::string& part_path, uint64_t total_bytes,
                                           const ProgressFn& progress) {
  const int fd = ::open(part_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return make_error("cannot open '%s': %s", part_path.c_str(), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error("cannot stat '%s': %s", part_path.c_str(), std::strerror(e));
  }
  uint64_t have = static_cast<uint64_t>(st.st_size);
  if (have > total_bytes) {
    // Longer than the file: not a prefix of it. Start over.
    if (::ftruncate(fd, 0) != 0) {
      const int e = errno;
      ::close(fd);
      return make_error("cannot truncate '%s': %s", part_path.c_str(), std::strerror(e));
    }
    have = 0;
  }
  auto hash = std::make_unique<Sha256>();
  // Hash the prefix already on disk, so the digest covers the whole file at the end.
  std::string buf(kHashChunkBytes, '\0');
  for (uint64_t at = 0; at < have;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), have - at));
    const ssize_t r = ::pread(fd, buf.data(), want, static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      const int e = r < 0 ? errno : EIO;
      ::close(fd);
      return make_error("cannot read '%s': %s", part_path.c_str(), std::strerror(e));
    }
    hash->update(buf.data(), static_cast<size_t>(r));
    at += static_cast<uint64_t>(r);
  }
  if (::lseek(fd, static_cast<off_t>(have), SEEK_SET) < 0) {
    const int e = errno;
    ::close(fd);
    return make_error("cannot seek '%s': %s", part_path.c_str(), std::strerror(e));
  }
  DownloadResult result;
  result.resumed_from = have;
  if (have < total_bytes) {
    Exchange ex;
    ex.url = file_url(repo, file);
    ex.what = "downloading " + repo + "/" + file;
    ex.fd = fd;
    ex.hash = &hash;
    ex.offset = have;
    ex.total_bytes = total_bytes;
    ex.progress = &progress;
    if (progress) progress(have, total_bytes);
    Status s = perform(ex);
    if (ex.restart) result.resumed_from = 0;
    have = ex.offset + ex.written;
    if (!s.ok()) {
      ::close(fd);
      if (ex.sink_errno == ENOSPC) {
        return make_error(
            "disk full while downloading %s into '%s' (%llu of %llu bytes written; the part is kept "
            "and the next pull resumes it once there is room)",
            file.c_str(), part_path.c_str(), static_cast<unsigned long long>(have),
            static_cast<unsigned long long>(total_bytes));
      }
      return s.error();
    }
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error("cannot flush '%s': %s", part_path.c_str(), std::strerror(e));
  }
  ::close(fd);
  if (have != total_bytes) {
    retryable_ = true;
    return make_error("downloading %s: the transfer ended after %llu of %llu bytes", file.c_str(),
                      static_cast<unsigned long long>(have), static_cast<unsigned long long>(total_bytes));
  }
  result.bytes = have;
  result.sha256 = hash->hex_digest();
  return result;
}

Result<std::vector<HubFile>> parse_tree_listing(const std::string& json) {
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded()) return make_error("the tree listing is not valid JSON");
  if (!j.is_array()) return make_error("the tree listing is not a JSON array");
  std::vector<HubFile> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    if (!e.is_object()) return make_error("tree entry %zu is not an object", i);
    if (!e.contains("type") || !e["type"].is_string()) return make_error("tree entry %zu has no string 'type'", i);
    if (e["type"].get<std::string>() != "file") continue;
    if (!e.contains("path") || !e["path"].is_string()) return make_error("tree entry %zu has no string 'path'", i);
    HubFile f;
    f.path = e["path"].get<std::string>();
    if (Status st = check_hub_path(f.path); !st.ok()) {
      return make_error("tree entry %zu: %s", i, st.error().message.c_str());
    }
    const std::string shown = printable(f.path);
    if (!e.contains("size") || !e["size"].is_number_unsigned()) {
      return make_error("tree entry '%s' has no non-negative integer 'size'", shown.c_str());
    }
    f.size = e["size"].get<uint64_t>();
    if (e.contains("lfs") && e["lfs"].is_object()) {
      const auto& lfs = e["lfs"];
      // The file's own size is lfs.size ("size" is the LFS size on the hub too; keep both honest).
      if (lfs.contains("size") && lfs["size"].is_number_unsigned()) f.size = lfs["size"].get<uint64_t>();
      const std::string oid = lfs.contains("oid") && lfs["oid"].is_string() ? lfs["oid"].get<std::string>() : "";
      if (!is_sha256_hex(oid)) {
        return make_error("tree entry '%s' has lfs.oid '%s' but it must be 64 lowercase hex digits (a SHA-256)",
                          shown.c_str(), printable(oid, 80).c_str());
      }
      f.sha256 = oid;
    }
    // Sizes are file offsets (off_t) on the way to disk.
    if (f.size > static_cast<uint64_t>(INT64_MAX)) {
      return make_error("tree entry '%s' has size %llu, more than the largest file size (2^63 - 1 bytes)",
                        shown.c_str(), static_cast<unsigned long long>(f.size));
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string parse_next_link(const std::string& link_header) {
  // <url>; rel="next", <url2>; rel="prev"
  size_t pos = 0;
  while (pos < link_header.size()) {
    const size_t lt = link_header.find('<', pos);
    if (lt == std::string::npos) break;
    const size_t gt = link_header.find('>', lt);
    if (gt == std::string::npos) break;
    const size_t next = link_header.find('<', gt);
    const std::string params =
        link_header.substr(gt + 1, next == std::string::npos ? std::string::npos : next - gt - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos) {
      return link_header.substr(lt + 1, gt - lt - 1);
    }
    pos = gt + 1;
  }
  return "";
}

}  // namespace sniper::hub
