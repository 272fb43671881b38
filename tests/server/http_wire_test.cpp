// SPDX-License-Identifier: MIT
// HTTP/1.1 wire parsing (no sockets): the head terminator across reads, request line and
// headers, percent-decoding and query parameters, the limits and their statuses, body lengths,
// keep-alive rules and the response head (no header injection).
#include "server/http_wire.h"

#include <gtest/gtest.h>

namespace sniper::server {
namespace {

TEST(HttpWire, FindsTheHeadEndAcrossReads) {
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY";
  EXPECT_EQ(find_head_end(head, 0), head.size() - 4);
  for (size_t split = 0; split <= head.size(); ++split) {
    // Scanning only from where the previous read ended finds the same end.
    const size_t first = find_head_end(std::string_view(head).substr(0, split), 0);
    const size_t end = first != 0 ? first : find_head_end(head, split);
    EXPECT_EQ(end, head.size() - 4) << split;
  }
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\nHost: x\n\n", 0), 24u);
  EXPECT_EQ(find_head_end("GET / HTTP/1.1\r\nHost: x\r\n", 0), 0u);
}

TEST(HttpWire, ParsesRequestLineHeadersPathAndQuery) {
  httplib::Request req;
  const WireError e = parse_request_head(
      "POST /v1/context/my%20ctx%2Fx?a=1&b=c+d&flag HTTP/1.1\r\nHost: x\r\nContent-Length:  12 \r\nX-Two: 1\r\nx-two: "
      "2\r\n\r\n",
      WireLimits{}, &req);
  ASSERT_FALSE(e) << e.message;
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/v1/context/my ctx/x");
  EXPECT_EQ(req.target, "/v1/context/my%20ctx%2Fx?a=1&b=c+d&flag");
  EXPECT_EQ(req.get_param_value("a"), "1");
  EXPECT_EQ(req.get_param_value("b"), "c d");
  EXPECT_TRUE(req.has_param("flag"));
  EXPECT_EQ(req.get_header_value("content-length"), "12");
  EXPECT_EQ(req.get_header_value_count("X-Two"), 2u);
  size_t body = 0;
  EXPECT_FALSE(request_body_length(req, WireLimits{}, &body));
  EXPECT_EQ(body, 12u);
  // A '%' without two hex digits stays as it is.
  httplib::Request r2;
  ASSERT_FALSE(parse_request_head("GET /a%zz%4 HTTP/1.0\r\n\r\n", WireLimits{}, &r2));
  EXPECT_EQ(r2.path, "/a%zz%4");
}

TEST(HttpWire, RefusesWithTheRightStatus) {
  WireLimits limits;
  limits.max_head_bytes = 64;
  limits.max_headers = 2;
  limits.max_body_bytes = 100;
  auto status = [&](const std::string& head) {
    httplib::Request req;
    const WireError e = parse_request_head(head, limits, &req);
    if (e) return e.status;
    size_t body = 0;
    return request_body_length(req, limits, &body).status;
  };
  EXPECT_EQ(status("GET / HTTP/1.1\r\n\r\n"), 0);
  EXPECT_EQ(status("GET / HTTP/1.1\r\n" + std::string(60, 'x') + "\r\n\r\n"), 431);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), 431);
  EXPECT_EQ(status("GET / HTTP/3\r\n\r\n"), 505);
  EXPECT_EQ(status("GET  / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("G(T / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET http://x/ HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nBad Name: 1\r\n\r\n"), 400);
  EXPECT_EQ(status("GET / HTTP/1.1\r\nA: 1\r\n"), 400);  // no blank line
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"), 413);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nContent-Length: 100\r\n\r\n"), 0);
  EXPECT_EQ(status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 411);
}

TEST(HttpWire, KeepAliveRules) {
  auto keep = [](const std::string& head) {
    httplib::Request req;
    EXPECT_FALSE(parse_request_head(head, WireLimits{}, &req));
    return wants_keep_alive(req);
  };
  EXPECT_TRUE(keep("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.1\r\nConnection: Close\r\n\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.1\r\nConnection: upgrade, close\r\n\r\n"));
  EXPECT_FALSE(keep("GET / HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(keep("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
}

TEST(HttpWire, ResponseHeadHasLengthOrChunksAndNoInjectedHeaders) {
  httplib::Response res;
  res.status = 503;
  res.set_content("{}", "application/json");
  res.headers.emplace("X-Evil", "a\r\nSet-Cookie: x");
  res.headers.emplace("Content-Length", "999");
  const std::string h = response_head(res, false, false);
  EXPECT_EQ(h.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u) << h;
  EXPECT_NE(h.find("Content-Length: 2\r\n"), std::string::npos) << h;
  EXPECT_EQ(h.find("999"), std::string::npos) << h;
  EXPECT_EQ(h.find("Set-Cookie"), std::string::npos) << h;
  EXPECT_NE(h.find("Connection: close\r\n\r\n"), std::string::npos) << h;
  const std::string c = response_head(res, true, true);
  EXPECT_NE(c.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << c;
  EXPECT_EQ(c.find("Content-Length"), std::string::npos) << c;
  EXPECT_NE(c.find("Connection: keep-alive\r\n\r\n"), std::string::npos) << c;
  const std::string s = simple_json_response(408, "{\"error\":{}}");
  EXPECT_EQ(s.substr(s.size() - 12), "{\"error\":{}}");
}

}  // namespace
}  // namespace sniper::server
