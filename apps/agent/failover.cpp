// SPDX-License-Identifier: MIT
// Failover chain, retries and cooldowns over BackendClient (see failover.h).
#include "agent/failover.h"
#include "agent/text_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <thread>

namespace sniper::agent {

namespace {

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.1fs" : "%.0fs", s);
  return buf;
}

}  // namespace

std::optional<double> parse_retry_after(const std::string& raw, std::chrono::system_clock::time_point now) {
  std::string value = trim(raw);
  if (all_digits(value)) {
    if (value.size() > 9) return std::nullopt;
    return std::stod(value);
  }
  // HTTP dates: "Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994".
  static const char* kFormats[] = {"%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %d %H:%M:%S %Y"};
  for (const char* fmt : kFormats) {
    std::tm tm{};
    const char* end = strptime(value.c_str(), fmt, &tm);
    if (!end || *end != '\0') continue;
    time_t when = timegm(&tm);
    if (when == static_cast<time_t>(-1)) continue;
    double delta = std::chrono::duration<double>(std::chrono::system_clock::from_time_t(when) - now).count();
    return delta > 0 ? delta : 0.0;
  }
  return std::nullopt;
}

BackendPool::BackendPool(const AgentConfig& config, PoolClocks clocks) : config_(config), clocks_(std::move(clocks)) {
  if (!clocks_.sleep) {
    clocks_.sleep = [](double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); };
  }
  for (const BackendConfig& b : config_.backends) {
    backends_.push_back(
        Backend{BackendClient(b, config_.connect_timeout_s, config_.read_timeout_s), {}, "", {}, {}, {}});
  }
}

void BackendPool::add_backend(const BackendConfig& config) {
  config_.backends.push_back(config);
  backends_.push_back(
      Backend{BackendClient(config, config_.connect_timeout_s, config_.read_timeout_s), {}, "", {}, {}, {}});
}

void BackendPool::set_timeouts(double connect_s, double read_s) {
  config_.connect_timeout_s = connect_s;
  config_.read_timeout_s = read_s;
  for (Backend& b : backends_) b.client = BackendClient(b.client.config(), connect_s, read_s);
}

std::vector<size_t> BackendPool::chain(Tier tier) const {
  // Tier preference: the requested tier, then the nearest others (a bigger model before a smaller
  // one, except that the fast tier prefers primary over heavy).
  std::vector<Tier> order;
  switch (tier) {
    case Tier::kFast: order = {Tier::kFast, Tier::kPrimary, Tier::kHeavy}; break;
    case Tier::kPrimary: order = {Tier::kPrimary, Tier::kHeavy, Tier::kFast}; break;
    case Tier::kHeavy: order = {Tier::kHeavy, Tier::kPrimary, Tier::kFast}; break;
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < backends_.size(); ++i) {
    if (!pinned_.empty() && backends_[i].name() == pinned_) out.push_back(i);
  }
  for (Tier t : order) {
    for (size_t i = 0; i < backends_.size(); ++i) {
      if (backends_[i].client.config().role == t && backends_[i].name() != pinned_) out.push_back(i);
    }
  }
  return out;
}

bool BackendPool::pin(const std::string& name) {
  if (name.empty()) {
    pinned_.clear();
    return true;
  }
  for (const Backend& b : backends_) {
    if (b.name() == name) {
      pinned_ = name;
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& BackendPool::capabilities(size_t index) {
  static const std::vector<std::string> kNone;
  Backend& b = backends_[index];
  if (b.client.config().capabilities) return *b.client.config().capabilities;
  if (!b.capabilities) {
    const auto now = clocks_.steady();
    if (now < b.capabilities_retry || cooldown_left_s(index) > 0) return kNone;
    auto caps = b.client.model_capabilities();
    if (!caps.ok()) {
      b.capabilities_retry = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(config_.cooldown_s));
      return kNone;
    }
    b.capabilities = std::move(caps).value();
  }
  return *b.capabilities;
}

std::vector<size_t> BackendPool::capable_chain(Tier tier, const std::vector<std::string>& required) {
  std::vector<size_t> out;
  for (size_t i : chain(tier)) {
    const std::vector<std::string>& caps = capabilities(i);
    bool all = true;
    for (const std::string& r : required) all = all && std::find(caps.begin(), caps.end(), r) != caps.end();
    if (all) out.push_back(i);
  }
  return out;
}

double BackendPool::cooldown_left_s(size_t index) const {
  double left = std::chrono::duration<double>(backends_[index].cooldown_until - clocks_.steady()).count();
  return left > 0 ? left : 0;
}

PoolResult BackendPool::chat(Tier tier, const ChatRequest& request, const DeltaFn& on_delta,
                             const std::atomic<bool>* cancel,
                             const std::function<void(const std::string&)>& on_notice) {
  PoolResult out;
  auto notice = [&](const std::string& line) {
    out.notices.push_back(line);
    if (on_notice) on_notice(line);
  };
  std::vector<size_t> order =
      request.required_capabilities.empty() ? chain(tier) : capable_chain(tier, request.required_capabilities);
  if (order.empty() && !request.required_capabilities.empty() && !backends_.empty()) {
    std::string need;
    for (const std::string& r : request.required_capabilities) need += (need.empty() ? "" : ", ") + r;
    out.result.failure = FailureKind::kClient;
    out.result.error = "no backend's model has " + need;
    return out;
  }
  if (order.empty()) {
    out.result.failure = FailureKind::kDown;
    out.result.error = "no backends configured";
    return out;
  }
  bool first = true;
  bool produced = false;
  for (size_t idx : order) {
    bool was_first = first;
    first = false;
    Backend& b = backends_[idx];
    double left = cooldown_left_s(idx);
    if (left > 0) {
      notice(b.name() + " skipped (" + b.last_error + "; cooling down " + format_seconds(left) + ")");
      continue;
    }
    for (int attempt = 0; attempt <= config_.retries; ++attempt) {
      if (attempt > 0) clocks_.sleep(0.2 * attempt);
      produced = false;
      DeltaFn wrapped = [&](std::string_view text, bool reasoning) {
        produced = true;
        if (on_delta) on_delta(text, reasoning);
      };
      ChatResult r = b.client.chat(request, wrapped, cancel);
      ++b.stats.requests;
      out.backend = b.name();
      out.fallback = !was_first;
      if (r.ok()) {
        b.stats.prompt_tokens += r.prompt_tokens;
        b.stats.completion_tokens += r.completion_tokens;
        b.stats.busy_s += r.elapsed_s;
        if (r.streamed && r.tokens_per_second() > 0) b.stats.last_tok_s = r.tokens_per_second();
        out.result = std::move(r);
        return out;
      }
      if (r.failure == FailureKind::kCancelled) {
        out.result = std::move(r);
        return out;
      }
      ++b.stats.failures;
      b.last_error = r.error;
      FailureKind kind = r.failure;
      std::string retry_after = r.retry_after;
      out.result = std::move(r);
      if (produced) return out;  // partial output already shown: no silent retry elsewhere
      if (kind == FailureKind::kServer && attempt < config_.retries) {
        notice(b.name() + ": " + b.last_error + " (retry " + std::to_string(attempt + 1) + ")");
        continue;
      }
      double cooldown = 0;
      if (kind == FailureKind::kRateLimited) {
        auto ra = parse_retry_after(retry_after, clocks_.system());
        cooldown = ra ? *ra : config_.cooldown_s;
      } else if (kind == FailureKind::kDown || kind == FailureKind::kTimeout || kind == FailureKind::kServer) {
        cooldown = config_.cooldown_s;
      }
      if (cooldown > 0) {
        auto until = clocks_.steady() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                            std::chrono::duration<double>(cooldown));
        if (until > b.cooldown_until) b.cooldown_until = until;
        notice(b.name() + ": " + b.last_error + " (cooling down " + format_seconds(cooldown) + ")");
      } else {
        notice(b.name() + ": " + b.last_error);
      }
      break;
    }
  }
  if (out.backend.empty()) {
    // Every backend is cooling down after failing: say which, why, and when they are tried again.
    std::string why;
    for (size_t idx : order) {
      const Backend& b = backends_[idx];
      why += (why.empty() ? "" : "; ") + b.name() + ": " + (b.last_error.empty() ? "unavailable" : b.last_error) +
             ", cooling down, tried again in " + format_seconds(cooldown_left_s(idx));
    }
    out.result.failure = FailureKind::kDown;
    out.result.error = "no backend answers (" + why + ")";
  }
  return out;
}

}  // namespace sniper::agent
