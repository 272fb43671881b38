// SPDX-License-Identifier: MIT
#include "hub_model.h"

#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "engine/plan.h"
#include "hub/model_store.h"
#include "progress.h"

namespace sniper::cli {

namespace {

constexpr double kLineIntervalS = 3.0;  // a progress line this often when stderr is not a terminal

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

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
  o.with_mmproj = request.with_mmproj;
  o.on_file_start = [&](const std::string& f, int i, int n) { display.start(f, i, n); };
  o.progress = [&](uint64_t done, uint64_t total) { display.update(done, total); };
  o.on_file_end = [&](const std::string&, bool ok) { display.end(ok); };
  o.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  auto result = hub::pull_model(client, store, ref, o);
  if (!result.ok() && request.offline_fallback && client.last_http_status() == 0) {
    // The hub did not answer at all: a complete match already in the store will do.
    auto local = hub::resolve_local(store, ref, request.budget_bytes, request.with_mmproj);
    if (local.ok()) {
      std::fprintf(stderr, "%s\nusing %s from the store without checking the hub\n", result.error().message.c_str(),
                   local->paths.front().c_str());
      return local;
    }
  }
  return result;
}

namespace {

bool looks_like_path(const std::string& text) {
  return text.ends_with(".gguf") || text.starts_with("/") || text.starts_with("./") || text.starts_with("../") ||
         text.starts_with("~");
}

// A bare NAME[:QUANT] (no owner): the one store repository whose name is NAME (any case).
Result<hub::RepoRef> find_in_store_by_name(const hub::ModelStore& store, const std::string& text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  SNIPER_ASSIGN_OR_RETURN(std::vector<hub::StoreEntry> entries, store.list());
  std::set<std::string> repos;
  for (const hub::StoreEntry& e : entries) {
    const std::string repo_name = e.repo.substr(e.repo.find('/') + 1);
    if (!e.partial && lower(repo_name) == lower(name)) repos.insert(e.repo);
  }
  if (repos.empty()) {
    return make_error(
        "no model file '%s', and the store (%s) has no model named '%s' ('sniper list' shows the store; a store "
        "name is OWNER/NAME[:QUANT])",
        text.c_str(), store.home().c_str(), name.c_str());
  }
  if (repos.size() > 1) {
    std::string listing;
    for (const std::string& r : repos) listing += (listing.empty() ? "" : ", ") + r;
    return make_error("'%s' is ambiguous: the store holds %s; give OWNER/NAME", text.c_str(), listing.c_str());
  }
  return hub::parse_repo_ref(*repos.begin() + (colon == std::string::npos ? "" : text.substr(colon)));
}

}  // namespace

Result<std::string> resolve_model_ref(const std::string& text, uint64_t budget_bytes) {
  std::error_code ec;
  if (std::filesystem::exists(text, ec)) {
    if (std::filesystem::is_directory(text, ec))
      return make_error("'%s' is a directory; a model is a GGUF file (for a folder of models: sniper serve --models)",
                        text.c_str());
    return text;
  }
  if (looks_like_path(text)) return make_error("no model file '%s'", text.c_str());
  SNIPER_ASSIGN_OR_RETURN(std::string home, hub::sniper_home());
  hub::ModelStore store(home);
  hub::RepoRef ref;
  if (text.find('/') == std::string::npos) {
    SNIPER_ASSIGN_OR_RETURN(ref, find_in_store_by_name(store, text));
  } else {
    auto parsed = hub::parse_repo_ref(text);
    if (!parsed.ok()) {
      return make_error("no model file '%s', and it is no store name either: %s", text.c_str(),
                        parsed.error().message.c_str());
    }
    ref = *parsed;
  }
  // In the store already: no network. Else pulled, as -hf does.
  auto local = hub::resolve_local(store, ref, budget_bytes);
  if (local.ok()) return local->paths.front();
  HubPullRequest request;
  request.ref = ref.display();
  request.budget_bytes = budget_bytes;
  request.offline_fallback = true;
  SNIPER_ASSIGN_OR_RETURN(hub::PullResult pulled, pull_with_progress(request));
  return pulled.paths.front();
}

Status check_model_positionals(const Args& args) {
  const bool flagged = args.has("--model") || args.has("--hf-repo");
  if (args.has("--model") && args.has("--hf-repo"))
    return make_error("pass either -m MODEL or -hf REPO[:QUANT], not both");
  return args.check_positionals(flagged ? 0 : 1, flagged ? "no MODEL word besides -m/-hf"
                                                         : "one MODEL (a GGUF file or a store name); text goes "
                                                           "after a flag, quoted");
}

Result<std::string> model_path_from_args(const Args& args) {
  SNIPER_ASSIGN_OR_RETURN(ModelFiles files, model_files_from_args(args));
  return files.model;
}

bool wants_hub_mmproj(const Args& args) {
  if (args.has("--mmproj") || args.has("--no-mmproj")) return false;
  const std::string& c = args.command();
  return c == "chat" || c == "serve" || ((c == "run" || c == "logits") && (args.has("--image") || args.has("--audio")));
}

Result<ModelFiles> model_files_from_args(const Args& args) {
  SNIPER_TRY(check_model_positionals(args));
  std::string text;
  if (args.has("--model")) {
    text = args.get_string("--model");
  } else if (!args.positional_info().empty()) {
    const Positional& p = args.positional_info().front();
    // "sniper run -p Once upon a time": a word after a flag's value that cannot be a model.
    std::error_code ec;
    if (!p.follows.empty() && !std::filesystem::exists(p.text, ec) && !looks_like_path(p.text) &&
        p.text.find('/') == std::string::npos) {
      return make_error("%s", stray_words_message(args.positional_info()).c_str());
    }
    text = p.text;
  }
  SNIPER_ASSIGN_OR_RETURN(uint64_t budget, resolve_memory_budget(args.get_string("--mem", "auto")));
  if (!text.empty()) {
    SNIPER_ASSIGN_OR_RETURN(std::string path, resolve_model_ref(text, budget));
    return ModelFiles{path, ""};
  }
  if (!args.has("--hf-repo")) {
    return make_error(
        "no model given: name a GGUF file or a store name (OWNER/NAME[:QUANT]) after 'sniper %s', or "
        "pass -m MODEL",
        args.command().c_str());
  }
  HubPullRequest request;
  request.ref = args.get_string("--hf-repo");
  request.budget_bytes = budget;
  request.offline_fallback = true;
  request.with_mmproj = wants_hub_mmproj(args);
  SNIPER_ASSIGN_OR_RETURN(hub::PullResult pulled, pull_with_progress(request));
  return ModelFiles{pulled.paths.front(), pulled.mmproj_path};
}

}  // namespace sniper::cli
