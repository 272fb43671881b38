// SPDX-License-Identifier: MIT
// `sniper top`: a terminal dashboard for a running `sniper serve`. Polls GET /metrics (Prometheus
// text, parsed by prometheus_text.h) and GET /props every --interval seconds and redraws one
// frame in place (alternate screen, cursor home, erase to end). `--once` prints one plain frame
// (no ANSI control codes) and exits, for scripts and tests.
// Invariants: the terminal is restored (cooked mode, cursor shown, main screen) on every exit
// path after raw mode was entered; an unreachable server on the first poll exits 1 with a
// message naming the URL; later failures are shown in the frame and polling continues.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/result.h"
#include "cli/args.h"
#include "server/bounded_json.h"
#include "server/latency_histogram.h"
#include "server/prometheus_text.h"
#include "server/serve_main.h"

namespace sniper::server {
namespace {

using Clock = std::chrono::steady_clock;

struct TopOptions {
  std::string scheme = "http";
  std::string host = "127.0.0.1";
  int port = 8000;
  double interval_s = 1.0;
  bool once = false;
  std::string api_key;
  std::string url() const {
    const bool ipv6 = host.find(':') != std::string::npos;
    return scheme + "://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
};

std::vector<cli::FlagSpec> top_flags() {
  return {
      {"--url", nullptr, "URL", "server to watch (default http://127.0.0.1:8000)"},
      {"--interval", nullptr, "S", "seconds between polls, 0.1..3600 (default 1)"},
      {"--once", nullptr, nullptr, "print one frame without terminal control codes and exit"},
      {"--api-key", nullptr, "KEY", "sent as 'Authorization: Bearer KEY'"},
      {"--help", "-h", nullptr, "show this help"},
  };
}

void print_top_usage() {
  cli::print_usage("top", "[--url URL] [--interval S] [--once] [--api-key KEY]", top_flags(),
                   "A terminal dashboard of a running sniper serve: tok/s, memory, slots, expert-cache hit rate, SSD "
                   "GB/s, requests, models. Keys: q quits (Ctrl-C too).");
}

// Parses "http[s]://host[:port][/]" into `opt`.
Status parse_url(const std::string& url, TopOptions* opt) {
  size_t sep = url.find("://");
  if (sep == std::string::npos) return make_error("--url '%s' must start with http:// or https://", url.c_str());
  std::string scheme = url.substr(0, sep);
  if (scheme != "http" && scheme != "https") {
    return make_error("--url '%s' has scheme '%s' but must be http or https", url.c_str(), scheme.c_str());
  }
  std::string rest = url.substr(sep + 3);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) return make_error("--url '%s' must not have a path", url.c_str());
  int port = scheme == "https" ? 443 : 80;
  std::string host = rest;
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    host = rest.substr(0, colon);
    std::string port_text = rest.substr(colon + 1);
    char* end = nullptr;
    long p = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || p < 1 || p > 65535) {
      return make_error("--url '%s' has port '%s' but it must be in [1, 65535]", url.c_str(), port_text.c_str());
    }
    port = static_cast<int>(p);
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return make_error("--url '%s' has no host", url.c_str());
  opt->scheme = scheme;
  opt->host = host;
  opt->port = port;
  return ok_status();
}

Result<TopOptions> parse_top_args(int argc, char** argv) {
  TopOptions opt;
  SNIPER_ASSIGN_OR_RETURN(cli::Args args, cli::Args::parse("top", argc, argv, 2, top_flags()));
  SNIPER_TRY(args.check_positionals(0, ""));
  if (args.has("--url")) SNIPER_TRY(parse_url(args.get_string("--url"), &opt));
  SNIPER_ASSIGN_OR_RETURN(opt.interval_s, args.get_float("--interval", 1.0, 0.1, 3600));
  opt.api_key = args.get_string("--api-key");
  opt.once = args.has("--once");
  return opt;
}

// One poll of the server.
struct Snapshot {
  PromMetrics metrics;
  nlohmann::json props = nlohmann::json::object();
  Clock::time_point at;
};

Result<std::string> http_get(httplib::Client& client, const TopOptions& opt, const char* path) {
  httplib::Headers headers;
  if (!opt.api_key.empty()) headers.emplace("Authorization", "Bearer " + opt.api_key);
  httplib::Result res = client.Get(path, headers);
  if (!res) {
    return make_error("cannot reach %s%s: %s error (is sniper serve running there?)", opt.url().c_str(), path,
                      httplib::to_string(res.error()).c_str());
  }
  if (res->status != 200) {
    std::string body = res->body.substr(0, 200);
    return make_error("GET %s%s returned HTTP %d: %s", opt.url().c_str(), path, res->status, body.c_str());
  }
  return res->body;
}

Result<Snapshot> poll_server(httplib::Client& client, const TopOptions& opt) {
  Snapshot snap;
  SNIPER_ASSIGN_OR_RETURN(std::string metrics_text, http_get(client, opt, "/metrics"));
  SNIPER_ASSIGN_OR_RETURN(snap.metrics, parse_prometheus_text(metrics_text));
  SNIPER_ASSIGN_OR_RETURN(std::string props_text, http_get(client, opt, "/props"));
  nlohmann::json props = parse_json_or_discarded<nlohmann::json>(props_text);  // bounded: any server may answer
  if (props.is_discarded() || !props.is_object()) {
    return make_error("GET %s/props did not return a JSON object", opt.url().c_str());
  }
  snap.props = std::move(props);
  snap.at = Clock::now();
  return snap;
}

// Type-checked reads from /props (never throw).
std::string prop_string(const nlohmann::json& props, const char* key, const char* fallback = "?") {
  auto it = props.find(key);
  if (it != props.end() && it->is_string()) return it->get<std::string>();
  if (it != props.end() && it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return fallback;
}
double prop_number(const nlohmann::json& props, const char* key, double fallback = 0.0) {
  auto it = props.find(key);
  return it != props.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return u == 0 ? fmt("%.0f %s", bytes, units[u]) : fmt("%.1f %s", bytes, units[u]);
}

std::string human_count(double n) {
  if (n >= 1e9) return fmt("%.2fG", n / 1e9);
  if (n >= 1e6) return fmt("%.2fM", n / 1e6);
  if (n >= 1e4) return fmt("%.1fk", n / 1e3);
  return fmt("%.0f", n);
}

std::string human_duration(double s) {
  long t = static_cast<long>(s);
  if (t >= 3600) return fmt("%ldh%02ldm%02lds", t / 3600, (t / 60) % 60, t % 60);
  if (t >= 60) return fmt("%ldm%02lds", t / 60, t % 60);
  return fmt("%.0fs", s);
}

// A bar of `width` cells for a fraction in [0, 1] (clamped; NaN shows empty).
std::string bar(double fraction, int width, bool ansi) {
  if (!(fraction >= 0)) fraction = 0;
  fraction = std::min(fraction, 1.0);
  int filled = static_cast<int>(std::lround(fraction * width));
  std::string s = "[";
  if (ansi) s += fraction > 0.9 ? "\x1b[31m" : fraction > 0.7 ? "\x1b[33m" : "\x1b[32m";
  for (int i = 0; i < width; ++i) {
    if (i == filled && ansi) s += "\x1b[2m";
    s += i < filled ? (ansi ? "\u2588" : "#") : (ansi ? "\u00b7" : ".");
  }
  if (ansi) s += "\x1b[0m";
  return s + "]";
}

constexpr int kMaxModelLines = 8;  // models listed one per line; more are left out

// Renders one frame. `prev` (may be null) gives rates between polls; `error` (may be empty) is
// the last poll's failure, shown instead of stale data being mistaken for live. Pure function.
std::string render_frame(const Snapshot& now, const Snapshot* prev, const TopOptions& opt, bool ansi, int columns,
                         const std::string& error) {
  const PromMetrics& m = now.metrics;
  const nlohmann::json& p = now.props;
  const int bar_w = std::clamp(columns - 60, 10, 30);
  const char* bold = ansi ? "\x1b[1m" : "";
  const char* dim = ansi ? "\x1b[2m" : "";
  const char* reset = ansi ? "\x1b[0m" : "";
  std::string out;
  auto line = [&](const char* label, const std::string& text) {
    out += fmt("%s%-10s%s %s", bold, label, reset, text.c_str());
    out += ansi ? "\x1b[K\n" : "\n";
  };

  double uptime = m.get("sniper_uptime_seconds");
  out += fmt("%ssniper top%s  %s  up %s", bold, reset, opt.url().c_str(), human_duration(uptime).c_str());
  out += ansi ? "\x1b[K\n\x1b[K\n" : "\n\n";

  double n_params = prop_number(p, "n_params");
  line("model", fmt("%s  %s(%s, %s params, ctx %.0f, template %s)%s", prop_string(p, "model").c_str(), dim,
                    prop_string(p, "arch").c_str(), human_count(n_params).c_str(), prop_number(p, "n_ctx"),
                    prop_string(p, "chat_template").c_str(), reset));
  // The model pool (several models behind one server): one line, then one per model.
  if (m.find("sniper_models_loaded").has_value()) {
    line("models",
         fmt("%.0f/%.0f loaded   swaps %.0f   idle unloads %.0f   load failures %.0f   timeouts %.0f",
             m.get("sniper_models_loaded"), m.get("sniper_models_max_loaded"), m.get("sniper_model_swaps_total"),
             m.get("sniper_model_unloads_total", 0, {{"reason", "keep_alive"}}),
             m.get("sniper_model_load_failures_total"), m.get("sniper_model_wait_timeouts_total")));
    int shown = 0;
    for (const PromSample& s : m.samples) {
      if (s.name != "sniper_model_loaded" || s.labels.empty() || s.labels[0].first != "model") continue;
      if (++shown > kMaxModelLines) break;
      const PromLabels who = {s.labels[0]};
      line("", fmt("%-24s %-8s %9s   load %.2f s   loads %.0f   active %.0f   waiting %.0f", s.labels[0].second.c_str(),
                   s.value > 0 ? "loaded" : "-",
                   s.value > 0 ? human_bytes(m.get("sniper_model_memory_bytes", 0, who)).c_str() : "",
                   m.get("sniper_model_load_seconds", 0, who), m.get("sniper_model_loads_total", 0, who),
                   m.get("sniper_model_requests_active", 0, who), m.get("sniper_model_requests_waiting", 0, who)));
    }
  }
  double rss = m.get("sniper_rss_bytes");
  double peak = m.get("sniper_peak_rss_bytes");
  double budget = m.get("sniper_memory_budget_bytes", prop_number(p, "memory_budget_bytes"));
  line("memory", fmt("%s %s  RSS %s / budget %s  (peak %s)  residency %s",
                     bar(budget > 0 ? rss / budget : 0, bar_w, ansi).c_str(),
                     budget > 0 ? fmt("%3.0f%%", 100 * rss / budget).c_str() : "  -", human_bytes(rss).c_str(),
                     budget > 0 ? human_bytes(budget).c_str() : "none", human_bytes(peak).c_str(),
                     prop_string(p, "residency").c_str()));
  double slots = m.get("sniper_slots_total", prop_number(p, "slots"));
  double busy = m.get("sniper_slots_busy");
  line("slots",
       fmt("%s %.0f/%.0f busy   queued %.0f   active %.0f", bar(slots > 0 ? busy / slots : 0, bar_w, ansi).c_str(),
           busy, slots, m.get("sniper_requests_queued"), m.get("sniper_requests_active")));
  line("requests",
       fmt("ok %.0f   error %.0f   cancelled %.0f   %s(chat %.0f, completions %.0f)%s",
           m.sum("sniper_requests_total", {{"status", "ok"}}), m.sum("sniper_requests_total", {{"status", "error"}}),
           m.sum("sniper_requests_total", {{"status", "cancelled"}}), dim,
           m.sum("sniper_requests_total", {{"endpoint", "chat"}}),
           m.sum("sniper_requests_total", {{"endpoint", "completions"}}), reset));
  double tokens_in = m.get("sniper_prompt_tokens_total");
  double tokens_out = m.get("sniper_generated_tokens_total");
  std::string rate = "-";
  if (prev != nullptr) {
    double dt = std::chrono::duration<double>(now.at - prev->at).count();
    double d_out = tokens_out - prev->metrics.get("sniper_generated_tokens_total");
    if (dt > 0 && d_out >= 0) rate = fmt("%.1f", d_out / dt);
  }
  line("tokens", fmt("in %s   out %s   now %s tok/s generated", human_count(tokens_in).c_str(),
                     human_count(tokens_out).c_str(), rate.c_str()));
  line("speed", fmt("prefill %.1f tok/s   decode %.1f tok/s   %s(last request)%s",
                    m.get("sniper_prefill_tokens_per_second"), m.get("sniper_decode_tokens_per_second"), dim, reset));
  double ttft_n = m.get("sniper_time_to_first_token_seconds_count");
  double ttft_mean = ttft_n > 0 ? m.get("sniper_time_to_first_token_seconds_sum") / ttft_n : 0;
  line("TTFT", fmt("last %.1f ms   mean %.1f ms over %.0f requests", 1e3 * m.get("sniper_time_to_first_token_seconds"),
                   1e3 * ttft_mean, ttft_n));
  // Per-request latency histograms: median and 99th percentile.
  const auto quantiles = [&m](const char* name) {
    std::array<uint64_t, LatencyHistogram::kBounds.size() + 1> cumulative{};
    const std::string bucket = std::string(name) + "_bucket";
    for (size_t b = 0; b < cumulative.size(); ++b) {
      const std::string le = b < LatencyHistogram::kBounds.size() ? fmt("%g", LatencyHistogram::kBounds[b]) : "+Inf";
      cumulative[b] = static_cast<uint64_t>(m.get(bucket, 0, {{"le", le}}));
    }
    const LatencyHistogram h = LatencyHistogram::from_cumulative(cumulative);
    return fmt("p50 %.0f ms p99 %.0f ms", 1e3 * h.quantile(0.5), 1e3 * h.quantile(0.99));
  };
  line("Latency",
       fmt("queue %s   first token %s   inter-token %s", quantiles("sniper_queue_seconds").c_str(),
           quantiles("sniper_first_token_seconds").c_str(), quantiles("sniper_inter_token_seconds").c_str()));
  double hit_rate = m.get("sniper_expert_cache_hit_rate");
  // Experts shared across users: what one pass per slot would read over what the batched passes read.
  const double read = m.get("sniper_moe_experts_read_total");
  const std::string shared =
      read > 0 ? fmt("   shared %.2fx", m.get("sniper_moe_experts_per_sequence_total") / read) : std::string();
  line("experts", fmt("%s %5.1f%% hit   hits %s   misses %s%s", bar(hit_rate, bar_w, ansi).c_str(), 100 * hit_rate,
                      human_count(m.get("sniper_expert_cache_hits_total")).c_str(),
                      human_count(m.get("sniper_expert_cache_misses_total")).c_str(), shared.c_str()));
  double gbps = m.get("sniper_ssd_read_gbps");
  double depth = m.get("sniper_io_queue_depth");
  line("SSD", fmt("%s %.2f GB/s   read %s total", bar(gbps / 8.0, bar_w, ansi).c_str(), gbps,
                  human_bytes(m.get("sniper_ssd_read_bytes_total")).c_str()));
  line("io queue", fmt("%s %.0f reads in flight", bar(depth / 64.0, bar_w, ansi).c_str(), depth));
  out += ansi ? "\x1b[K\n" : "\n";
  if (!error.empty()) {
    out += fmt("%s%s (retrying)%s", ansi ? "\x1b[31m" : "", error.c_str(), reset);
    out += ansi ? "\x1b[K\n" : "\n";
  } else if (ansi) {
    out += fmt("%sq quits; polling every %.1fs%s\x1b[K\n", dim, opt.interval_s, reset);
  }
  return out;
}

// Signal -> flag; the only global, written by the handler and read by the loop.
volatile std::sig_atomic_t g_stop_requested = 0;
extern "C" void on_stop_signal(int) { g_stop_requested = 1; }

// Puts the terminal into non-canonical, no-echo mode for single-key input and restores it on
// destruction (also shows the cursor and leaves the alternate screen).
class TerminalGuard {
 public:
  TerminalGuard() {
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      stdin_raw_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    std::fputs("\x1b[?1049h\x1b[?25l", stdout);  // alternate screen, hide cursor
    std::fflush(stdout);
  }
  ~TerminalGuard() {
    std::fputs("\x1b[?25h\x1b[?1049l", stdout);
    std::fflush(stdout);
    if (stdin_raw_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  TerminalGuard(const TerminalGuard&) = delete;
  TerminalGuard& operator=(const TerminalGuard&) = delete;
  bool stdin_raw() const { return stdin_raw_; }

 private:
  termios saved_{};
  bool stdin_raw_ = false;
};

int terminal_columns() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 100;
}

// Waits until `deadline`, a stop signal, or 'q' on stdin. Returns true to quit.
bool wait_for_key_or_deadline(Clock::time_point deadline, bool read_keys) {
  while (!g_stop_requested) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    int r = poll(read_keys ? &fd : nullptr, read_keys ? 1 : 0, static_cast<int>(std::min<long long>(left, 200)));
    if (r > 0 && (fd.revents & POLLIN)) {
      char c = 0;
      ssize_t n = read(STDIN_FILENO, &c, 1);
      if (n == 1 && (c == 'q' || c == 'Q' || c == 3)) return true;
      if (n == 0) read_keys = false;  // stdin closed: stop watching it
    }
  }
  return true;
}

}  // namespace

int top_main(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      print_top_usage();
      return 0;
    }
  }
  Result<TopOptions> parsed = parse_top_args(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "error: %s\n", parsed.error().message.c_str());
    return 2;
  }
  const TopOptions opt = *parsed;
  httplib::Client client(opt.url());
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(5, 0);

  Result<Snapshot> first = poll_server(client, opt);
  if (!first.ok()) {
    std::fprintf(stderr, "error: %s\n", first.error().message.c_str());
    return 1;
  }
  if (opt.once) {
    std::fputs(render_frame(*first, nullptr, opt, /*ansi=*/false, 100, "").c_str(), stdout);
    std::fflush(stdout);
    return 0;
  }

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  TerminalGuard terminal;
  Snapshot current = std::move(first).value();
  std::optional<Snapshot> previous;
  std::string error;
  while (true) {
    std::string frame =
        "\x1b[H" +
        render_frame(current, previous ? &*previous : nullptr, opt, /*ansi=*/true, terminal_columns(), error) +
        "\x1b[J";
    std::fputs(frame.c_str(), stdout);
    std::fflush(stdout);
    auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opt.interval_s));
    if (wait_for_key_or_deadline(deadline, terminal.stdin_raw())) break;
    Result<Snapshot> next = poll_server(client, opt);
    if (next.ok()) {
      previous = std::move(current);
      current = std::move(next).value();
      error.clear();
    } else {
      error = next.error().message;
    }
  }
  return 0;
}

}  // namespace sniper::server
