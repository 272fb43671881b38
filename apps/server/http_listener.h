// SPDX-License-Identifier: MIT
// HttpListener: the server's connection handling. One accept loop does admission control: at
// most max_connections open connections in total and max_connections_per_client per client
// address; a connection past either cap gets a 503 at once and is closed, before any byte of it
// is read. An admitted connection gets its own thread (created on demand, none pooled), which
// reads the request head within header_timeout_s of its first byte (408 and close past that),
// the body within timeout_s, hands the request to the handler, writes the response (each write
// within timeout_s, a streaming body chunk by chunk) and serves keep-alive requests until the
// client idles for keep_alive_s.
// Why not httplib::Server: it serves every connection from a fixed pool of threads and a read
// timeout per recv(); a few dozen clients that send half a request hold every thread (issue 26),
// and its accept loop offers no hook for per-address caps or a 503 before reading. cpp-httplib
// stays for its Request/Response/DataSink types, so the route handlers did not change.
// Invariants: every admitted connection is counted until its thread ends; stop() closes the
// listening socket and shuts down every open connection, and run() returns only after every
// connection thread has ended. Thread-safe: stop() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include <httplib.h>

#include "base/result.h"
#include "server/http_wire.h"

namespace sniper::server {

struct ListenerOptions {
  size_t max_connections = 512;            // open connections in total; past it: 503
  size_t max_connections_per_client = 64;  // open connections per client address; past it: 503
  double header_timeout_s = 10;            // first byte of a request head -> its blank line
  double timeout_s = 30;                   // reading a body; each write of a response
  double keep_alive_s = 5;                 // idle wait for the next request on a connection
  WireLimits wire;
  // Runs on the connection thread before a complete request goes to the handler. May be empty.
  std::function<void(const httplib::Request& req)> on_request;
  // Runs on the connection thread once a handled request's response has been written (a
  // streamed body to its end, or as far as the client took it: complete false). May be empty.
  std::function<void(const httplib::Request& req, const httplib::Response& res, bool complete)> on_response;
};

// Counters for /metrics; monotonic except open_connections.
struct ListenerStats {
  uint64_t accepted = 0;
  uint64_t rejected_total_cap = 0;
  uint64_t rejected_client_cap = 0;
  uint64_t header_timeouts = 0;
  uint64_t open_connections = 0;
};

class HttpListener {
 public:
  // Runs on a connection thread for each complete request; fills res. May block (streaming
  // content providers run after it returns, on the same thread).
  using Handler = std::function<void(httplib::Request& req, httplib::Response& res)>;
  // Builds the body of an error answer sent before routing (503 admission, 408, parse errors).
  using ErrorBody = std::function<std::string(int status, const std::string& message)>;

  HttpListener(ListenerOptions options, Handler handler, ErrorBody error_body);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds and listens on host:port (0 picks a free port); returns the port.
  [[nodiscard]] Result<int> bind(const std::string& host, int port);
  // Accepts until stop(), then waits for every connection thread. Precondition: bind() succeeded.
  void run();
  // Thread-safe; idempotent. Ends the accept loop and shuts down open connections.
  void stop();

  ListenerStats stats() const;

 private:
  struct Admission;
  void serve_connection(int fd, const std::string& client);
  void release(int fd, const std::string& client);
  void reject(int fd, int status, const std::string& message);

  ListenerOptions options_;
  Handler handler_;
  ErrorBody error_body_;
  int listen_fd_ = -1;
  int wake_fd_[2] = {-1, -1};  // a pipe: stop() writes to wake the accept loop's poll()
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  std::condition_variable all_closed_;
  std::map<std::string, size_t> per_client_;  // client address -> open connections
  std::set<int> open_fds_;                    // shut down by stop()
  ListenerStats stats_;
};

}  // namespace sniper::server
