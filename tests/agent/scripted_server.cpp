// SPDX-License-Identifier: MIT
// Scripted OpenAI-compatible server for the agent tests (see scripted_server.h).
#include "agent/scripted_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace sniper::agent::testing {

using nlohmann::json;

namespace {

std::string content_of(const json& message) {
  if (!message.is_object() || !message.contains("content")) return "";
  const json& c = message["content"];
  if (c.is_string()) return c.get<std::string>();
  std::string out;
  if (c.is_array()) {
    for (const json& part : c) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
    }
  }
  return out;
}

std::string encode(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void replace_all(std::string* s, const std::string& from, const std::string& to) {
  size_t pos = 0;
  while ((pos = s->find(from, pos)) != std::string::npos) {
    s->replace(pos, from.size(), to);
    pos += to.size();
  }
}

json completion(const std::string& content, int prompt_tokens, int completion_tokens) {
  return json{{"id", "chatcmpl-scripted"},
              {"object", "chat.completion"},
              {"created", 0},
              {"model", "scripted"},
              {"choices", json::array({json{{"index", 0},
                                            {"message", {{"role", "assistant"}, {"content", content}}},
                                            {"finish_reason", "stop"}}})},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens}}}};
}

json chunk(const json& delta, const json& finish_reason) {
  return json{{"id", "chatcmpl-scripted"},
              {"object", "chat.completion.chunk"},
              {"created", 0},
              {"model", "scripted"},
              {"choices", json::array({json{{"index", 0}, {"delta", delta}, {"finish_reason", finish_reason}}})}};
}

}  // namespace

ScriptedServer::ScriptedServer() : server_(std::make_unique<httplib::Server>()) {}

ScriptedServer::~ScriptedServer() { stop(); }

void ScriptedServer::set_retry_after(const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  retry_after_ = value;
}

void ScriptedServer::add_rule(const Rule& rule) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.push_back(rule);
}

void ScriptedServer::set_default_reply(const std::string& reply) {
  std::lock_guard<std::mutex> lock(mu_);
  default_reply_ = reply;
}

std::vector<json> ScriptedServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void ScriptedServer::add_page(const std::string& path, const std::string& body, const std::string& content_type) {
  server_->Get(path, [this, body, content_type](const httplib::Request&, httplib::Response& res) {
    std::string page = body;
    replace_all(&page, "{{BASE_ENC}}", encode(url()));
    replace_all(&page, "{{BASE}}", url());
    res.set_content(page, content_type.c_str());
  });
}

std::string ScriptedServer::choose_reply(const json& body, const Rule** chosen) const {
  std::string user, system;
  if (body.contains("messages") && body["messages"].is_array()) {
    for (const json& m : body["messages"]) {
      if (!m.is_object() || !m.contains("role")) continue;
      if (m["role"] == "user") user = content_of(m);
      if (m["role"] == "system") system = content_of(m);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const Rule& r : rules_) {
    bool match = true;
    for (const std::string& s : r.user_contains) match = match && user.find(s) != std::string::npos;
    for (const std::string& s : r.system_contains) match = match && system.find(s) != std::string::npos;
    if (match) {
      *chosen = &r;
      return r.reply;
    }
  }
  *chosen = nullptr;
  return default_reply_;
}

bool ScriptedServer::start() {
  server_->Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  server_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu_);
    json models = json::array({{{"id", "scripted"}, {"object", "model"}}});
    if (!capabilities_.empty()) models[0]["capabilities"] = capabilities_;
    res.set_content(json{{"object", "list"}, {"data", models}}.dump(), "application/json");
  });
  server_->Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body, nullptr, false);
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(body);
    }
    chat_requests_.fetch_add(1);
    Mode mode = mode_.load();
    if (mode == Mode::kHang) {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!stopping_.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      res.status = 500;
      return;
    }
    if (mode == Mode::kRateLimited) {
      std::lock_guard<std::mutex> lock(mu_);
      res.status = 429;
      res.set_header("Retry-After", retry_after_);
      res.set_content(R"({"error":{"message":"rate limited","type":"rate_limit_error","param":null,"code":null}})",
                      "application/json");
      return;
    }
    if (mode == Mode::kServerError) {
      res.status = 500;
      res.set_content(R"({"error":{"message":"scripted failure","type":"server_error","param":null,"code":null}})",
                      "application/json");
      return;
    }
    if (const size_t limit = context_chars_.load(); limit > 0 && body.is_object() && body.contains("messages")) {
      size_t chars = 0;
      for (const json& m : body["messages"]) {
        if (m.is_object() && m.contains("content") && m["content"].is_string())
          chars += m["content"].get_ref<const std::string&>().size();
      }
      if (chars > limit) {
        res.status = 400;
        res.set_content(
            R"({"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}})",
            "application/json");
        return;
      }
    }
    if (body.is_discarded() || !body.is_object()) {
      res.status = 400;
      res.set_content(R"({"error":{"message":"bad json","type":"invalid_request_error","param":null,"code":null}})",
                      "application/json");
      return;
    }
    const Rule* rule = nullptr;
    std::string reply = choose_reply(body, &rule);
    int delay_ms = rule ? rule->chunk_delay_ms : 0;
    size_t chunk_chars = rule && rule->chunk_chars > 0 ? rule->chunk_chars : 6;
    bool stream = body.contains("stream") && body["stream"].is_boolean() && body["stream"].get<bool>();
    int n_chunks = static_cast<int>((reply.size() + chunk_chars - 1) / chunk_chars);
    if (!stream) {
      res.set_content(completion(reply, 10, n_chunks).dump(), "application/json");
      return;
    }
    res.set_chunked_content_provider("text/event-stream",
                                     [this, reply, delay_ms, chunk_chars, n_chunks](size_t, httplib::DataSink& sink) {
                                       auto send = [&](const json& j) {
                                         std::string line = "data: " + j.dump() + "\n\n";
                                         return sink.write(line.data(), line.size());
                                       };
                                       if (!send(chunk({{"role", "assistant"}, {"content", ""}}, nullptr)))
                                         return false;
                                       for (size_t pos = 0; pos < reply.size(); pos += chunk_chars) {
                                         if (stopping_.load()) return false;
                                         if (!send(chunk({{"content", reply.substr(pos, chunk_chars)}}, nullptr)))
                                           return false;
                                         if (delay_ms > 0)
                                           std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
                                       }
                                       json last = chunk(json::object(), "stop");
                                       last["usage"] = {{"prompt_tokens", 10}, {"completion_tokens", n_chunks}};
                                       if (!send(last)) return false;
                                       std::string done = "data: [DONE]\n\n";
                                       if (!sink.write(done.data(), done.size())) return false;
                                       sink.done();
                                       return true;
                                     });
  });
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) return false;
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // listen_after_bind() sets is_running() once it accepts; connections queue on the bound socket anyway.
  for (int i = 0; i < 500 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return true;
}

void ScriptedServer::stop() {
  stopping_.store(true);
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

std::string closed_port_url() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    socklen_t len = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return "http://127.0.0.1:" + std::to_string(port);
}

std::string read_test_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace sniper::agent::testing
