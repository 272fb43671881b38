// SPDX-License-Identifier: MIT
#include "hub_model.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "engine/plan.h"

namespace sniper::cli {

namespace {

constexpr double kLineIntervalS = 3.0;  // a progress line this often when stderr is not a terminal

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string format_eta(double s) {
  if (s < 0 || s > 99 * 3600) return "--:--";
  const long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", t / 60, t % 60);
  }
  return buf;
}

// Progress of one file: bytes, percent, rate over this transfer (a resumed prefix does not
// count as speed), ETA.
class ProgressDisplay {
 public:
  ProgressDisplay() : tty_(::isatty(STDERR_FILENO) == 1) {}

  void start(const std::string& file, int index, int count) {
    file_ = file;
    started_ = false;
    std::fprintf(stderr, "[%d/%d] %s\n", index, count, file.c_str());
  }

  void update(uint64_t done, uint64_t total) {
    const double now = steady_s();
    if (!started_) {
      started_ = true;
      t0_ = now;
      base_ = done;
      last_ = -1e9;
      if (done > 0) std::fprintf(stderr, "  resuming at %s\n", hub::format_bytes(done).c_str());
    }
    const bool finished = done == total;
    if (!finished && now - last_ < (tty_ ? 0.2 : kLineIntervalS)) return;
    last_ = now;
    const double elapsed = now - t0_;
    const double rate = elapsed > 0 ? static_cast<double>(done - base_) / elapsed : 0;  // bytes/s
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : -1;
    const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
    char line[256];
    std::snprintf(line, sizeof(line), "%s / %s  %5.1f%%  %.1f MB/s  ETA %s", hub::format_bytes(done).c_str(),
                  hub::format_bytes(total).c_str(), pct, rate / 1e6, format_eta(eta).c_str());
    if (tty_) {
      constexpr int kWidth = 30;
      const int fill = static_cast<int>(pct / 100.0 * kWidth);
      std::string bar(static_cast<size_t>(fill), '=');
      if (fill < kWidth) bar += '>';
      bar.resize(kWidth, ' ');
      std::fprintf(stderr, "\r  [%s] %s\033[K", bar.c_str(), line);
      if (finished) std::fputc('\n', stderr);
    } else {
      std::fprintf(stderr, "  %s\n", line);
    }
    std::fflush(stderr);
  }

  void end(bool ok) {
    if (tty_ && started_ && !ok) std::fputc('\n', stderr);
  }

 private:
  bool tty_;
  std::string file_;
  bool started_ = false;
  double t0_ = 0;
  double last_ = 0;
  uint64_t base_ = 0;
};

int retries_from_env() {
  const char* v = std::getenv("SNIPER_PULL_RETRIES");
  if (v == nullptr || *v == '\0') return 3;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 100) return 3;
  return static_cast<int>(n);
}

}  // namespace

Result<hub::PullResult> pull_with_progress(const HubPullRequest& request) {
  SNIPER_ASSIGN_OR_RETURN(hub::RepoRef ref, hub::parse_repo_ref(request.ref));
  SNIPER_ASSIGN_OR_RETURN(hub::HubConfig config, hub::hub_config_from_env());
  SNIPER_ASSIGN_OR_RETURN(std::string home, hub::sniper_home());
  hub::ModelStore store(home);
  hub::HubClient client(config);
  ProgressDisplay display;
  hub::PullOptions o;
  o.budget_bytes = request.budget_bytes;
  o.max_retries = retries_from_env();
  o.on_file_start = [&](const std::string& f, int i, int n) { display.start(f, i, n); };
  o.progress = [&](uint64_t done, uint64_t total) { display.update(done, total); };
  o.on_file_end = [&](const std::string&, bool ok) { display.end(ok); };
  o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto result = hub::pull_model(client, store, ref, o);
  if (!result.ok() && request.offline_fallback && client.last_http_status() == 0) {
    // The hub did not answer at all: a complete match already in the store will do.
    auto local = hub::resolve_local(store, ref, request.budget_bytes);
    if (local.ok()) {
      std::fprintf(stderr, "%s\nusing %s from the store without checking the hub\n", result.error().message.c_str(),
                   local->paths.front().c_str());
      return local;
    }
  }
  return result;
}

Result<std::string> model_path_from_args(const Args& args) {
  if (args.has("--model") && args.has("--hf-repo"))
    return make_error("pass either -m PATH or -hf REPO[:QUANT], not both");
  if (args.has("--model")) return args.get_string("--model");
  if (!args.has("--hf-repo")) return make_error("no model given: pass -m PATH to a GGUF file or -hf REPO[:QUANT]");
  HubPullRequest request;
  request.ref = args.get_string("--hf-repo");
  SNIPER_ASSIGN_OR_RETURN(request.budget_bytes, resolve_memory_budget(args.get_string("--mem", "auto")));
  request.offline_fallback = true;
  SNIPER_ASSIGN_OR_RETURN(hub::PullResult pulled, pull_with_progress(request));
  return pulled.paths.front();
}

}  // namespace sniper::cli
