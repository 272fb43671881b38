// SPDX-License-Identifier: MIT
#include "server/request_log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>

#include <nlohmann/json.hpp>

namespace sniper::server {

namespace {

thread_local std::optional<RequestRecord> t_record;
std::mutex g_output_mu;

std::string iso_time(int64_t unix_ms) {
  const time_t secs = static_cast<time_t>(unix_ms / 1000);
  tm utc{};
  gmtime_r(&secs, &utc);
  char buf[96];  // room for any int the format could print
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(unix_ms % 1000));
  return buf;
}

// Header values and paths come from the client: quotes and control bytes are escaped so a line
// stays one line.
std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

Result<LogFormat> parse_log_format(const std::string& text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return make_error("--log-format is '%s' but must be text, json or off", text.c_str());
}

void begin_request_record(const std::string& client, const std::string& method, const std::string& path,
                          const std::string& user_agent) {
  RequestRecord r;
  r.start = std::chrono::steady_clock::now();
  r.client = client;
  r.method = method;
  r.path = path;
  r.user_agent = user_agent;
  t_record = std::move(r);
}

void note_request_model(const std::string& model) {
  if (t_record) t_record->model = model;
}

void note_request_tokens(int64_t prompt, int64_t cached, int64_t completion, const std::string& finish) {
  if (!t_record) return;
  t_record->prompt_tokens = prompt;
  t_record->cached_tokens = cached;
  t_record->completion_tokens = completion;
  t_record->finish = finish;
}

void end_request_record(int status, bool complete, const RequestLogOptions& options) {
  if (!t_record) return;
  RequestRecord r = std::move(*t_record);
  t_record.reset();
  if (!options.enabled || (!options.verbose && is_polled_route(r.method, r.path))) return;
  r.status = status;
  r.complete = complete;
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r.start).count();
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const std::string line = format_request_record(r, elapsed_ms, options.format, options.verbose, now_ms) + "\n";
  const std::lock_guard<std::mutex> lock(g_output_mu);
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

bool is_polled_route(const std::string& method, const std::string& path) {
  if (method != "GET") return false;
  return path == "/" || path == "/health" || path == "/metrics" || path == "/props" || path == "/v1/models" ||
         path == "/api/ps" || path == "/api/version";
}

std::string format_request_record(const RequestRecord& r, double elapsed_ms, LogFormat format, bool verbose,
                                  int64_t now_unix_ms) {
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json j;
    j["time"] = iso_time(now_unix_ms);
    j["client"] = r.client;
    j["method"] = r.method;
    j["path"] = r.path;
    j["status"] = r.status;
    j["model"] = r.model.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.model);
    if (r.prompt_tokens >= 0) {
      j["prompt_tokens"] = r.prompt_tokens;
      j["cached_tokens"] = r.cached_tokens;
      j["completion_tokens"] = r.completion_tokens;
      j["finish"] = r.finish;
    }
    j["duration_ms"] = static_cast<double>(static_cast<int64_t>(elapsed_ms * 10 + 0.5)) / 10;
    j["complete"] = r.complete;
    if (verbose) j["user_agent"] = r.user_agent;
    // Invalid UTF-8 from a client becomes U+FFFD instead of an exception.
    return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  }
  std::string line = iso_time(now_unix_ms) + " " + printable(r.client) + " \"" + printable(r.method) + " " +
                     printable(r.path) + "\" " + std::to_string(r.status);
  if (!r.model.empty()) line += " model=" + printable(r.model);
  if (r.prompt_tokens >= 0) {
    line += " tokens=" + std::to_string(r.prompt_tokens) + "+" + std::to_string(r.completion_tokens);
    if (r.cached_tokens > 0) line += " cached=" + std::to_string(r.cached_tokens);
    if (!r.finish.empty()) line += " finish=" + r.finish;
  }
  char ms[32];
  std::snprintf(ms, sizeof(ms), " %.0fms", elapsed_ms);
  line += ms;
  if (!r.complete) line += " (client gone before the end)";
  if (verbose && !r.user_agent.empty()) line += " \"" + printable(r.user_agent) + "\"";
  return line;
}

}  // namespace sniper::server
