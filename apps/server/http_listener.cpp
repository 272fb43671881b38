// SPDX-License-Identifier: MIT
#include "server/http_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace sniper::server {

namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after_s(double s) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// Milliseconds left until `deadline` for poll() (0 when past).
int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

enum class ReadResult { kData, kClosed, kTimeout };

// Appends what the socket has to *buf, waiting until `deadline` for at least one byte.
ReadResult read_some(int fd, std::string* buf, Clock::time_point deadline) {
  for (;;) {
    char chunk[16384];
    const ssize_t n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      buf->append(chunk, static_cast<size_t>(n));
      return ReadResult::kData;
    }
    if (n == 0) return ReadResult::kClosed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return ReadResult::kClosed;
    const int wait_ms = ms_left(deadline);
    if (wait_ms == 0) return ReadResult::kTimeout;
    pollfd p{fd, POLLIN, 0};
    const int r = poll(&p, 1, wait_ms);
    if (r == 0) return ReadResult::kTimeout;
    if (r < 0 && errno != EINTR) return ReadResult::kClosed;
  }
}

// Writes all of data, each wait for room at most timeout_s. Returns false on error or timeout.
bool write_all(int fd, const char* data, size_t size, double timeout_s) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      data += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    pollfd p{fd, POLLOUT, 0};
    const int r = poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (r <= 0 || (p.revents & (POLLERR | POLLHUP)) != 0) return false;
  }
  return true;
}

bool write_all(int fd, const std::string& s, double timeout_s) { return write_all(fd, s.data(), s.size(), timeout_s); }

// False once the peer has closed or reset the connection (a pending request byte is fine).
bool peer_open(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) <= 0) return true;
  if ((p.revents & (POLLERR | POLLHUP)) != 0) return false;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

std::string client_address(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&addr)->sin_addr, host, sizeof(host));
  } else if (addr.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_addr, host, sizeof(host));
  }
  return host;
}

}  // namespace

HttpListener::HttpListener(ListenerOptions options, Handler handler, ErrorBody error_body)
    : options_(std::move(options)), handler_(std::move(handler)), error_body_(std::move(error_body)) {}

HttpListener::~HttpListener() {
  stop();
  std::unique_lock<std::mutex> lock(mu_);
  all_closed_.wait(lock, [this] { return open_fds_.empty(); });
  if (listen_fd_ >= 0) close(listen_fd_);
  for (int& fd : wake_fd_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

Result<int> HttpListener::bind(const std::string& host, int port) {
  if (port < 0 || port > 65535) return make_error("--port is %d but must be in [0, 65535]", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(host.c_str(), service.c_str(), &hints, &found) != 0 || found == nullptr) {
    return make_error("cannot listen on %s:%d (the address does not resolve)", host.c_str(), port);
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return make_error("cannot listen on %s:%d (address in use or not available)", host.c_str(), port);
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int bound = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (pipe2(wake_fd_, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    return make_error("cannot create the listener's wake pipe: %s", std::strerror(errno));
  }
  listen_fd_ = fd;
  return bound;
}

void HttpListener::run() {
  while (!stopping_.load()) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (stopping_.load() || (p[1].revents & POLLIN) != 0) break;
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors: let the open connections finish instead of spinning.
      if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const std::string client = client_address(addr);
    std::string refusal;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (open_fds_.size() >= options_.max_connections) {
        ++stats_.rejected_total_cap;
        refusal = "the server has " + std::to_string(open_fds_.size()) +
                  " open connections, its limit (--max-connections); retry later";
      } else if (per_client_[client] >= options_.max_connections_per_client) {
        ++stats_.rejected_client_cap;
        refusal = "this client address has " + std::to_string(per_client_[client]) +
                  " open connections, the limit per client (--max-connections-per-client); retry later";
      } else {
        ++per_client_[client];
        open_fds_.insert(fd);
        ++stats_.accepted;
      }
      if (per_client_[client] == 0) per_client_.erase(client);
    }
    if (!refusal.empty()) {
      reject(fd, 503, refusal);
      continue;
    }
    try {
      std::thread([this, fd, client] { serve_connection(fd, client); }).detach();
    } catch (const std::exception&) {  // out of threads: refuse like any other overload
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (--per_client_[client] == 0) per_client_.erase(client);
        open_fds_.erase(fd);
      }
      reject(fd, 503, "the server cannot start another connection thread; retry later");
      all_closed_.notify_all();
    }
  }
  // Wait for the connection threads (stop() shut their sockets down).
  std::unique_lock<std::mutex> lock(mu_);
  all_closed_.wait(lock, [this] { return open_fds_.empty(); });
}

void HttpListener::stop() {
  if (stopping_.exchange(true)) return;
  if (wake_fd_[1] >= 0) {
    const char c = 1;
    (void)!write(wake_fd_[1], &c, 1);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
}

ListenerStats HttpListener::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ListenerStats s = stats_;
  s.open_connections = open_fds_.size();
  return s;
}

void HttpListener::reject(int fd, int status, const std::string& message) {
  // Best effort without blocking the accept loop: the answer fits the socket buffer. What the
  // client already sent is drained so the close is a FIN, not a reset that could discard it.
  const std::string response = simple_json_response(status, error_body_(status, message));
  (void)!send(fd, response.data(), response.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  shutdown(fd, SHUT_WR);
  char sink[4096];
  while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
  }
  close(fd);
}

void HttpListener::release(int fd, const std::string& client) {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown(fd, SHUT_WR);
  close(fd);  // under the lock: stop() never shuts down a reused descriptor number
  open_fds_.erase(fd);
  if (--per_client_[client] == 0) per_client_.erase(client);
  // Notified under the lock: once the last descriptor is gone the destructor may return (and
  // destroy all_closed_) as soon as it can take mu_, so this thread must be done with the
  // condition variable by then (ThreadSanitizer: notify_all racing pthread_cond_destroy).
  all_closed_.notify_all();
}

void HttpListener::serve_connection(int fd, const std::string& client) {
  const ListenerOptions& o = options_;
  std::string buf;  // bytes read and not yet consumed (a pipelined request may follow a body)
  auto send_error_and_close = [&](int status, const std::string& message) {
    write_all(fd, simple_json_response(status, error_body_(status, message)), o.timeout_s);
  };
  bool first = true;
  while (!stopping_.load()) {
    // The head: the first request of a connection must be complete header_timeout_s after the
    // accept; a later one waits keep_alive_s for its first byte, then header_timeout_s.
    Clock::time_point head_deadline = after_s(o.header_timeout_s);
    if (!first && buf.empty()) {
      if (read_some(fd, &buf, after_s(o.keep_alive_s)) != ReadResult::kData) break;
      head_deadline = after_s(o.header_timeout_s);
    }
    first = false;
    size_t head_end = find_head_end(buf, 0);
    bool closed = false;
    while (head_end == 0) {
      if (buf.size() > o.wire.max_head_bytes) {
        send_error_and_close(431,
                             "the request head is larger than " + std::to_string(o.wire.max_head_bytes) + " bytes");
        closed = true;
        break;
      }
      const size_t before = buf.size();
      const ReadResult r = read_some(fd, &buf, head_deadline);
      if (r == ReadResult::kTimeout) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.header_timeouts;
        }
        if (!buf.empty()) {
          send_error_and_close(408, "the request head did not arrive within " +
                                        std::to_string(static_cast<int>(o.header_timeout_s)) + " s (--header-timeout)");
        }
        closed = true;
        break;
      }
      if (r == ReadResult::kClosed) {
        closed = true;
        break;
      }
      head_end = find_head_end(buf, before);
    }
    if (closed) break;

    httplib::Request req;
    if (WireError e = parse_request_head(std::string_view(buf).substr(0, head_end), o.wire, &req)) {
      send_error_and_close(e.status, e.message);
      break;
    }
    size_t body_bytes = 0;
    if (WireError e = request_body_length(req, o.wire, &body_bytes)) {
      // A client that sends its whole body before reading (most do) would see a reset instead
      // of the 413 if the body were left unread: discard a bounded amount within the timeout.
      const std::string announced = req.get_header_value("Content-Length");
      constexpr size_t kMaxDiscardBytes = 64u << 20;
      if (e.status == 413 && announced.size() <= 9 && std::stoul(announced) <= kMaxDiscardBytes) {
        const size_t discard = std::stoul(announced);
        const Clock::time_point deadline = after_s(o.timeout_s);
        size_t seen = buf.size() - head_end;
        buf.clear();
        while (seen < discard && read_some(fd, &buf, deadline) == ReadResult::kData) {
          seen += buf.size();
          buf.clear();
        }
      }
      send_error_and_close(e.status, e.message);
      break;
    }
    buf.erase(0, head_end);
    if (body_bytes > buf.size() && req.get_header_value("Expect") == "100-continue") {
      if (!write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", o.timeout_s)) break;
    }
    const Clock::time_point body_deadline = after_s(o.timeout_s);
    while (buf.size() < body_bytes) {
      const ReadResult r = read_some(fd, &buf, body_deadline);
      if (r == ReadResult::kTimeout) {
        send_error_and_close(408, "the request body did not arrive within " +
                                      std::to_string(static_cast<int>(o.timeout_s)) + " s (--timeout)");
      }
      if (r != ReadResult::kData) {
        closed = true;
        break;
      }
    }
    if (closed) break;
    req.body = buf.substr(0, body_bytes);
    buf.erase(0, body_bytes);
    req.remote_addr = client;

    httplib::Response res;
    if (o.on_request) o.on_request(req);
    try {
      handler_(req, res);
    } catch (...) {  // the handler maps its own errors; this keeps a stray one from ending the process
      res = httplib::Response();
      res.status = 500;
      res.set_content(error_body_(500, "internal server error"), "application/json");
    }
    const bool keep_alive = wants_keep_alive(req) && !stopping_.load();
    if (!res.content_provider_) {
      const bool written = write_all(fd, response_head(res, /*chunked=*/false, keep_alive) + res.body, o.timeout_s);
      if (o.on_response) o.on_response(req, res, written);
      if (!written || !keep_alive) break;
      continue;
    }
    // A streamed body: HTTP/1.1 chunks (HTTP/1.0 clients get the raw bytes and a close).
    const bool chunked = req.version == "HTTP/1.1";
    if (!write_all(fd, response_head(res, chunked, keep_alive && chunked), o.timeout_s)) {
      if (o.on_response) o.on_response(req, res, false);
      break;
    }
    bool ok = true, done = false;
    size_t offset = 0;
    httplib::DataSink sink;
    sink.write = [&](const char* data, size_t n) {
      if (!ok) return false;
      if (n == 0) return true;
      char size_line[32];
      std::snprintf(size_line, sizeof(size_line), "%zx\r\n", n);
      ok = chunked ? write_all(fd, size_line, std::strlen(size_line), o.timeout_s) &&
                         write_all(fd, data, n, o.timeout_s) && write_all(fd, "\r\n", 2, o.timeout_s)
                   : write_all(fd, data, n, o.timeout_s);
      offset += n;
      return ok;
    };
    sink.done = [&] {
      if (done) return;
      done = true;
      if (ok && chunked) ok = write_all(fd, "0\r\n\r\n", o.timeout_s);
    };
    sink.is_writable = [&] { return ok && peer_open(fd); };
    while (ok && !done) {
      if (!res.content_provider_(offset, 0, sink)) ok = false;
    }
    res.content_provider_success_ = ok && done;
    if (o.on_response) o.on_response(req, res, ok && done);
    if (!ok || !keep_alive || !chunked) break;
  }
  release(fd, client);
}

}  // namespace sniper::server
